#include "core/json_text.h"
#include "core/json_fields.h"

namespace mstar {

using nlohmann::json;

void json_error(std::string_view where, std::string_view key, const std::string& why) {
  throw ConfigError(fmt::format("{}.{}: {}", where, key, why));
}

void read_json(const json& j, std::string_view where, std::string_view key, int64_t& out) {
  if (!j.is_number_integer()) json_error(where, key, fmt::format("expected an integer, got {}", json_excerpt(j)));
  if (j.is_number_unsigned() && j.get<uint64_t>() > static_cast<uint64_t>(INT64_MAX))
    json_error(where, key, fmt::format("{} is too large", json_excerpt(j)));
  out = j.get<int64_t>();
}
void read_json(const json& j, std::string_view where, std::string_view key, bool& out) {
  if (!j.is_boolean()) json_error(where, key, fmt::format("expected true or false, got {}", json_excerpt(j)));
  out = j.get<bool>();
}
void read_json(const json& j, std::string_view where, std::string_view key, DType& out) {
  if (!j.is_string()) json_error(where, key, fmt::format("expected a dtype name, got {}", json_excerpt(j)));
  out = parse_dtype(j.get<std::string>(), fmt::format("{}.{}", where, key));
}
void read_json(const json& j, std::string_view where, std::string_view key, std::optional<int64_t>& out) {
  if (j.is_null()) {
    out.reset();
    return;
  }
  int64_t v = 0;
  read_json(j, where, key, v);
  out = v;
}

json write_json(int64_t v) { return v; }
json write_json(bool v) { return v; }
json write_json(DType v) { return std::string(to_string(v)); }
json write_json(const std::optional<int64_t>& v) { return v ? json(*v) : json(nullptr); }
json write_json(const std::string& v) { return v; }

}  // namespace mstar
