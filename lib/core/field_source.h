#pragma once
// Reading declared fields (fields.h) from wherever they are written: a YAML
// mapping in a manifest, a JSON object in a checkpoint's config.json. The
// source reports every problem at its place and returns false; the reader
// goes on, so all of a block's problems are found in one pass.
#include <cstdint>
#include <string>
#include <string_view>
#include <type_traits>

#include <fmt/format.h>

#include "core/fields.h"

namespace mstar {

class FieldSource {
 public:
  virtual ~FieldSource() = default;
  virtual bool has(std::string_view key) = 0;
  virtual bool read(std::string_view key, int64_t& out, Range range) = 0;
  virtual bool read(std::string_view key, double& out, Range range) = 0;
  virtual bool read(std::string_view key, bool& out, Range range) = 0;
  virtual bool read(std::string_view key, std::string& out, Range range) = 0;
  // A problem that is not one value's (a cross-field rule), placed at `key`
  // (or at the block when the key is absent).
  virtual void error(std::string_view key, const std::string& message) = 0;
  // How the block is named in messages ("architecture").
  virtual std::string where() const = 0;
  std::string path(std::string_view key) const { return fmt::format("{}.{}", where(), key); }
};

// Reads every declared field of Config; a missing required field is
// reported with its doc. Returns false when anything was wrong.
template <class Config>
bool read_declared(FieldSource& src, Config& out) {
  bool ok = true;
  for_each_field<Config>([&](const auto& d) {
    if (!src.has(d.name)) {
      if (d.need != Need::defaulted) {
        src.error(d.name, fmt::format("{}: missing required key '{}' ({})", src.where(), d.name, d.doc));
        ok = false;
      }
      return;
    }
    ok = src.read(d.name, out.*(d.member), d.range) && ok;
  });
  return ok;
}

}  // namespace mstar
