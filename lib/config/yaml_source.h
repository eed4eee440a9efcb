#pragma once
// Loading YAML that a person (or an attacker) wrote, without crashing or
// hanging: only regular files up to a size limit; no NUL bytes, invalid
// UTF-8 or tab indentation; no anchors or aliases (they buy nothing in a
// config and are how an alias bomb gets in); nesting bounded by yaml-cpp's
// depth guard. Every problem is reported with its place.
#include <filesystem>
#include <optional>
#include <string>

#include <yaml-cpp/yaml.h>

#include "config/diagnostics.h"

namespace mstar {

constexpr std::size_t kMaxConfigBytes = 1 << 20;

// Reads and parses `path`; on any problem adds diagnostics naming `label`
// (how the file is shown) and returns nullopt.
std::optional<YAML::Node> load_yaml_file(const std::filesystem::path& path, const std::string& label,
                                         Diagnostics& diags);
std::optional<YAML::Node> load_yaml_text(const std::string& text, const std::string& label, Diagnostics& diags);

}  // namespace mstar
