#pragma once
// A FieldSource over a YAML mapping: each value read with its place, a
// missing or malformed one reported there, and (finish) every key no reader
// asked about reported as unknown, with a suggestion when one is close.
#include <set>
#include <string>
#include <string_view>

#include "config/yaml_read.h"
#include "core/field_source.h"

namespace mstar {

class YamlFieldSource final : public FieldSource {
 public:
  YamlFieldSource(const MapEntries& entries, YamlContext& ctx, std::string where)
      : m_(entries), ctx_(ctx), where_(std::move(where)) {}

  bool has(std::string_view key) override;
  bool read(std::string_view key, int64_t& out, Range range) override;
  bool read(std::string_view key, double& out, Range range) override;
  bool read(std::string_view key, bool& out, Range range) override;
  bool read(std::string_view key, std::string& out, Range range) override;
  void error(std::string_view key, const std::string& message) override;
  std::string where() const override { return where_; }

  // Reports the keys nobody asked about; false when there were any.
  bool finish();

 private:
  template <class T>
  bool read_value(std::string_view key, T& out, Range range);

  const MapEntries& m_;
  YamlContext& ctx_;
  std::string where_;
  std::set<std::string, std::less<>> asked_;
};

}  // namespace mstar
