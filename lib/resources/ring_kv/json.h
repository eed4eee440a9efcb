#pragma once
// RingKVConfig to and from JSON through its declared fields.
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "resources/ring_kv/config.h"

namespace mstar {

// Throws ConfigError "<where>.<key>: ..."; the result is validated.
RingKVConfig ring_kv_config_from_json(const nlohmann::json& j, std::string_view where);
nlohmann::json to_json(const RingKVConfig& c);

void read_json(const nlohmann::json& j, std::string_view where, std::string_view key, std::vector<RingGeometry>& out);
nlohmann::json write_json(const std::vector<RingGeometry>& v);

}  // namespace mstar
