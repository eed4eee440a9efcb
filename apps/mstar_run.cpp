// mstar-run CONFIG [--set k=v]... [--requests FILE|-] [--out FILE] [--json] [--frames-dir DIR]
// Runs a deployment: events as JSON lines (chunk, frame, done, error) on
// standard output or --out, a progress line on standard error when it is a
// terminal, and at the end the stats: a table on standard error, or with
// --json one {"event": "stats", ...} object as the last line of the events.
#include <unistd.h>

#include <fstream>
#include <iostream>

#include <CLI/CLI.hpp>

#include "cli.h"
#include <fmt/format.h>

#include "config/deployment.h"
#include "core/errors.h"
#include "engine/run.h"

int main(int argc, char** argv) {
  CLI::App app{"Run streaming generation for a deployment"};
  std::string config, requests, out_path, frames_dir;
  std::vector<std::string> sets;
  bool json = false;
  app.add_option("config", config, "deployment YAML")->required();
  app.add_option("--set", sets, "override a deployment key: dotted.key=value (repeatable)");
  app.add_option("--requests", requests, "JSON lines of requests (a file, or - for standard input)");
  app.add_option("--out", out_path, "write events here instead of standard output");
  app.add_option("--frames-dir", frames_dir, "world: write each frame's latents as raw f32 files here");
  app.add_flag("--json", json, "print the final stats as one JSON object (the last event line)");
  if (auto rc = mstar::cli::parse(app, argc, argv)) return *rc;
  const auto set_list = mstar::cli::sets(sets, "mstar-run");
  if (!set_list) return 2;
  const std::vector<mstar::SetOverride>& overrides = *set_list;
  mstar::Diagnostics diags;
  auto resolved = mstar::resolve_deployment(config, overrides, diags);
  if (!resolved) {
    std::cerr << diags.str();
    return 1;
  }
  try {
    std::ofstream file;
    if (!out_path.empty()) {
      file.open(out_path);
      if (!file) throw mstar::InputError(fmt::format("--out {}: cannot be written", out_path));
    }
    std::ostream& out = out_path.empty() ? std::cout : file;
    mstar::RunOptions options;
    options.frames_dir = frames_dir;
    if (!requests.empty()) {
      if (requests == "-") {
        options.requests = mstar::read_request_lines(std::cin, resolved->model);
      } else {
        std::ifstream in(requests);
        if (!in) throw mstar::InputError(fmt::format("--requests {}: cannot be read", requests));
        options.requests = mstar::read_request_lines(in, resolved->model);
      }
    }
    if (isatty(STDERR_FILENO))
      options.on_step = [](const mstar::RunStats& s) {
        fmt::print(stderr, "\rstep {:>6}  {} {:>8}  {:>7.1f} {}/s  {} done  {} failed ", s.steps, s.unit, s.produced,
                   s.seconds > 0 ? static_cast<double>(s.produced) / s.seconds : 0.0, s.unit, s.requests_done,
                   s.requests_failed);
      };
    const mstar::Weights weights = mstar::Weights::from_manifest(resolved->model);
    const auto stats = mstar::run_deployment(*resolved, weights, options,
                                             [&](const nlohmann::json& e) { out << e.dump() << "\n"; });
    if (isatty(STDERR_FILENO)) fmt::print(stderr, "\n");
    if (json) {
      auto j = stats.to_json();
      j["event"] = "stats";
      out << j.dump() << "\n";
    } else {
      std::cerr << stats.table();
    }
    out.flush();
  } catch (const std::exception& e) {
    fmt::print(stderr, "mstar-run: {}\n", e.what());
    return 1;
  }
  return 0;
}
