// mstar-replay TRACE.json [--backend reference|cpu|cuda] [--threads N]
// Replays a JSON trace through a KV resource and prints, as JSON, each step's
// admit outcome and every row's attention output (docs/replay-format.md).
#include <fstream>
#include <iostream>

#include <CLI/CLI.hpp>

#include "cli.h"
#include "engine/replay.h"

int main(int argc, char** argv) {
  CLI::App app{"Replay a JSON trace through an mstar KV resource"};
  std::string path, backend = "cpu";
  int threads = 1, indent = -1;
  app.add_option("trace", path, "trace file (JSON)")->required();
  app.add_option("--backend", backend, "reference, cpu or cuda")->check(CLI::IsMember({"reference", "cpu", "cuda"}));
  app.add_option("--threads", threads, "threads for the cpu backend")->check(CLI::PositiveNumber);
  app.add_option("--indent", indent, "pretty-print with this indent");
  if (auto rc = mstar::cli::parse(app, argc, argv)) return *rc;
  return mstar::cli::guarded("mstar-replay", [&] {
    std::ifstream in(path);
    if (!in) throw mstar::InputError(fmt::format("{}: cannot be opened", path));
    const auto trace = nlohmann::json::parse(in, nullptr, false);
    if (trace.is_discarded()) throw mstar::InputError(fmt::format("{}: not valid JSON", path));
    try {
      const mstar::ReplayOptions opts{mstar::parse_backend(backend), threads};
      std::cout << mstar::replay_trace(trace, opts).dump(indent) << "\n";
    } catch (const mstar::InputError& e) {
      throw mstar::InputError(fmt::format("{}: {}", path, e.what()));
    } catch (const mstar::ConfigError& e) {
      throw mstar::ConfigError(fmt::format("{}: {}", path, e.what()));
    }
    return mstar::cli::kOk;
  });
}
