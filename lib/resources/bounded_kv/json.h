#pragma once
// BoundedKVConfig to and from JSON, driven by the config's declared fields:
// unknown keys and missing required keys are errors naming the key.
#include <string_view>

#include <nlohmann/json.hpp>

#include "resources/bounded_kv/config.h"

namespace mstar {

// Throws ConfigError "<where>.<key>: ..." on any problem; the result is
// validated.
BoundedKVConfig bounded_kv_config_from_json(const nlohmann::json& j, std::string_view where);
nlohmann::json to_json(const BoundedKVConfig& c);

void read_json(const nlohmann::json& j, std::string_view where, std::string_view key, RetentionRule& out);
nlohmann::json write_json(const RetentionRule& r);

}  // namespace mstar
