#pragma once
// What the command-line programs share: the exit codes (0 done; 1 invalid
// input or config, with a message naming it; 2 a usage error or an internal
// one) and the --set overrides.
#include <fmt/format.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <exception>
#include <filesystem>
#include <new>
#include <optional>
#include <string>
#include <vector>

#include "config/deployment.h"
#include "config/model_deployment.h"
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

// `--model PATH` instead of a deployment file: the deployment
// write_model_deployment builds for it (config/model_deployment.h), its
// choices printed on standard error. The files live in a scratch folder as
// long as this object.
class ModelDeployment {
 public:
  explicit ModelDeployment(const std::string& model) {
    dir_ = std::filesystem::temp_directory_path() / fmt::format("mstar-model-{}", ::getpid());
    std::filesystem::create_directories(dir_);
    std::vector<std::string> chosen;
    config_ = write_model_deployment(model, dir_, chosen);
    for (const std::string& line : chosen) fmt::print(stderr, "{}\n", line);
  }
  ~ModelDeployment() {
    std::error_code ec;
    std::filesystem::remove_all(dir_, ec);
  }
  ModelDeployment(const ModelDeployment&) = delete;
  ModelDeployment& operator=(const ModelDeployment&) = delete;
  const std::filesystem::path& config() const { return config_; }

 private:
  std::filesystem::path dir_, config_;
};

// The deployment file or `--model PATH` options of a program that takes
// either, exactly one.
struct ConfigOrModel {
  std::string config, model;
  CLI::Option* config_option = nullptr;
  CLI::Option* model_option = nullptr;
  void add(CLI::App& app) {
    config_option = app.add_option("config", config, "deployment YAML");
    model_option = app.add_option("--model", model,
                                  "instead of a deployment: a checkpoint folder, a GGUF file or a manifest, run with "
                                  "the defaults docs/running.md documents (printed)");
    config_option->excludes(model_option);
  }
  // A usage error (printed) when neither is given.
  bool given(const char* tool) const {
    if (!config.empty() || !model.empty()) return true;
    fmt::print(stderr, "{}: give a deployment file or --model PATH\n", tool);
    return false;
  }
};

}  // namespace mstar::cli
