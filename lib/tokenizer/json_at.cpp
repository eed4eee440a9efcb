#include "tokenizer/json_at.h"

#include <fmt/format.h>

#include "core/errors.h"

namespace mstar::tok {
namespace {

const char* kind(const nlohmann::json& j) {
  switch (j.type()) {
    case nlohmann::json::value_t::null: return "null";
    case nlohmann::json::value_t::object: return "an object";
    case nlohmann::json::value_t::array: return "an array";
    case nlohmann::json::value_t::string: return "a string";
    case nlohmann::json::value_t::boolean: return "a boolean";
    case nlohmann::json::value_t::number_integer:
    case nlohmann::json::value_t::number_unsigned: return "an integer";
    case nlohmann::json::value_t::number_float: return "a number";
    default: return "an unexpected value";
  }
}

std::string join(const std::string& path, std::string_view key) {
  return path.empty() ? std::string(key) : fmt::format("{}.{}", path, key);
}

}  // namespace

std::string JsonAt::shown() const {
  std::string s = j_->dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
  if (s.size() > 120) s = s.substr(0, 100) + "...";
  return s;
}

void JsonAt::fail(std::string_view why) const {
  throw ConfigError(fmt::format("{}: {}: {}", *file_, path_.empty() ? "(top level)" : path_, why));
}

void JsonAt::unsupported(std::string_view hint) const {
  fail(fmt::format("unsupported value {} ({})", shown(), hint));
}

void JsonAt::expect_object() const {
  if (!j_->is_object()) fail(fmt::format("expected an object, got {} {}", kind(*j_), shown()));
}

void JsonAt::expect_array() const {
  if (!j_->is_array()) fail(fmt::format("expected an array, got {} {}", kind(*j_), shown()));
}

JsonAt JsonAt::at(std::string_view key) const {
  expect_object();
  auto it = j_->find(key);
  if (it == j_->end()) fail(fmt::format("missing required key '{}'", key));
  return JsonAt(*it, join(path_, key), *file_);
}

std::optional<JsonAt> JsonAt::find(std::string_view key) const {
  expect_object();
  auto it = j_->find(key);
  if (it == j_->end() || it->is_null()) return std::nullopt;
  return JsonAt(*it, join(path_, key), *file_);
}

JsonAt JsonAt::operator[](size_t i) const {
  expect_array();
  return JsonAt((*j_)[i], fmt::format("{}[{}]", path_, i), *file_);
}

size_t JsonAt::size() const {
  expect_array();
  return j_->size();
}

std::string JsonAt::str() const {
  if (!j_->is_string()) fail(fmt::format("expected a string, got {} {}", kind(*j_), shown()));
  return j_->get<std::string>();
}

bool JsonAt::boolean() const {
  if (!j_->is_boolean()) fail(fmt::format("expected true or false, got {} {}", kind(*j_), shown()));
  return j_->get<bool>();
}

int64_t JsonAt::integer() const {
  if (j_->is_number_unsigned()) {
    const auto v = j_->get<uint64_t>();
    if (v > static_cast<uint64_t>(INT64_MAX)) fail(fmt::format("integer {} is out of range", v));
    return static_cast<int64_t>(v);
  }
  if (!j_->is_number_integer()) fail(fmt::format("expected an integer, got {} {}", kind(*j_), shown()));
  return j_->get<int64_t>();
}

bool JsonAt::flag(std::string_view key, bool fallback) const {
  auto v = find(key);
  return v ? v->boolean() : fallback;
}

void JsonAt::only_keys(std::initializer_list<std::string_view> known) const {
  expect_object();
  for (auto it = j_->begin(); it != j_->end(); ++it) {
    bool ok = false;
    for (auto k : known) ok = ok || it.key() == k;
    if (!ok) {
      JsonAt(it.value(), join(path_, it.key()), *file_)
          .fail(fmt::format("unknown key '{}' (mstar refuses fields it does not implement)", it.key()));
    }
  }
}

}  // namespace mstar::tok
