#pragma once
// What the command-line programs share: the exit codes (0 done; 1 invalid
// input or config, with a message naming it; 2 a usage error or an internal
// one) and the --set overrides.
#include <unistd.h>

#include <exception>
#include <filesystem>
#include <new>
#include <optional>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include "config/deployment.h"
#include "core/errors.h"
#include "core/progress.h"

namespace mstar::cli {

constexpr int kOk = 0, kInvalid = 1, kUsage = 2, kInternal = 2;

// Parses the command line; returns the exit code when the program should stop
// (help: 0, a usage error: 2), nullopt to go on.
inline std::optional<int> parse(CLI::App& app, int argc, char** argv) {
  // Every program answers --version with mstar's version (the project's,
  // set by CMake), before any required argument is asked for.
  app.set_version_flag("--version", std::filesystem::path(argc > 0 ? argv[0] : "mstar").filename().string() +
                                        " (mstar) " MSTAR_VERSION);
  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    app.exit(e);
    return kOk;
  } catch (const CLI::CallForVersion& e) {
    app.exit(e);
    return kOk;
  } catch (const CLI::ParseError& e) {
    app.exit(e);
    return kUsage;
  }
  return std::nullopt;
}

// Where long work reports: a line on standard error when it is a terminal
// and the user did not ask for quiet (--quiet); nowhere otherwise, so logs
// and pipes hold only what the program says.
inline Progress progress_unless(bool quiet) {
  return !quiet && ::isatty(STDERR_FILENO) ? line_progress(stderr) : Progress{};
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

// Runs a program's body, turning what escapes it into the exit codes: bad
// input or config is 1, anything else is an internal error, 2.
template <class Body>
int guarded(const char* tool, Body&& body) {
  try {
    return body();
  } catch (const ConfigError& e) {
    fmt::print(stderr, "{}: {}\n", tool, e.what());
    return kInvalid;
  } catch (const InputError& e) {
    fmt::print(stderr, "{}: {}\n", tool, e.what());
    return kInvalid;
  } catch (const std::bad_alloc&) {
    fmt::print(stderr, "{}: out of memory\n", tool);
    return kInternal;
  } catch (const std::exception& e) {
    fmt::print(stderr, "{}: internal error: {}\n", tool, e.what());
    return kInternal;
  }
}

}  // namespace mstar::cli
