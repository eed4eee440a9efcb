#pragma once
// What the command-line programs share: the exit codes (0 done, 1 a problem
// in the input, 2 a usage error) and the --set overrides.
#include <optional>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include "config/deployment.h"
#include "core/errors.h"

namespace mstar::cli {

// Parses the command line; returns the exit code when the program should stop
// (help: 0, a usage error: 2), nullopt to go on.
inline std::optional<int> parse(CLI::App& app, int argc, char** argv) {
  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    app.exit(e);
    return 2;
  }
  return std::nullopt;
}

// The --set arguments; a malformed one is a usage error, reported by `tool`.
inline std::optional<std::vector<SetOverride>> sets(const std::vector<std::string>& args, const char* tool) {
  std::vector<SetOverride> out;
  try {
    for (const auto& s : args) out.push_back(parse_set(s));
  } catch (const ConfigError& e) {
    fmt::print(stderr, "{}: {}\n", tool, e.what());
    return std::nullopt;
  }
  return out;
}

}  // namespace mstar::cli
