#pragma once
// Reading a request's JSON object: the fields every request has (id); the
// typed getters are core/json_object.h's. What a request of each task holds
// is its program's (speech_program.h, frame_program.h); docs/running.md lists
// both.
#include <string>

#include <nlohmann/json.hpp>

#include "core/json_object.h"

namespace mstar {

// The request's id: a non-empty string (InputError otherwise).
std::string request_id(const nlohmann::json& request);

}  // namespace mstar
