#pragma once
// Reading tokenizer.json with errors that name the file, the JSON path and
// the offending value: "tokenizer.json: model.type: unsupported value ...".
#include <cstdint>
#include <initializer_list>
#include <optional>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

namespace mstar::tok {

class JsonAt {
 public:
  JsonAt(const nlohmann::json& j, std::string path, const std::string& file)
      : j_(&j), path_(std::move(path)), file_(&file) {}

  const nlohmann::json& json() const { return *j_; }
  const std::string& path() const { return path_; }
  const std::string& file() const { return *file_; }
  bool is_null() const { return j_->is_null(); }

  // A key that must be present (null counts as present).
  JsonAt at(std::string_view key) const;
  // A key that may be absent; absent and null both give nullopt.
  std::optional<JsonAt> find(std::string_view key) const;
  JsonAt operator[](size_t i) const;
  size_t size() const;  // of an array; refuses anything else

  std::string str() const;
  bool boolean() const;
  int64_t integer() const;
  // A key that may be absent or null, else must be a boolean.
  bool flag(std::string_view key, bool fallback) const;

  void expect_object() const;
  void expect_array() const;
  // Refuses any key outside `known`: a field mstar does not understand might
  // change the tokens, so it is never silently skipped.
  void only_keys(std::initializer_list<std::string_view> known) const;

  [[noreturn]] void fail(std::string_view why) const;
  // "unsupported value <value> (<hint>)"
  [[noreturn]] void unsupported(std::string_view hint) const;
  // The value, as JSON, cut short when long.
  std::string shown() const;

 private:
  const nlohmann::json* j_;
  std::string path_;
  const std::string* file_;
};

}  // namespace mstar::tok
