// mstar-replay TRACE.json [--backend reference|cpu] [--threads N]
// Replays a JSON trace through a KV resource and prints, as JSON, each step's
// admit outcome and every row's attention output (docs/replay-format.md).
#include <fstream>
#include <iostream>

#include <CLI/CLI.hpp>

#include "core/errors.h"
#include "replay.h"

int main(int argc, char** argv) {
  CLI::App app{"Replay a JSON trace through an mstar KV resource"};
  std::string path, backend = "cpu";
  int threads = 1, indent = -1;
  app.add_option("trace", path, "trace file (JSON)")->required();
  app.add_option("--backend", backend, "reference or cpu")->check(CLI::IsMember({"reference", "cpu"}));
  app.add_option("--threads", threads, "threads for the cpu backend")->check(CLI::PositiveNumber);
  app.add_option("--indent", indent, "pretty-print with this indent");
  CLI11_PARSE(app, argc, argv);

  std::ifstream in(path);
  if (!in) {
    std::cerr << "mstar-replay: cannot open " << path << "\n";
    return 1;
  }
  try {
    const auto trace = nlohmann::json::parse(in);
    mstar::ReplayOptions opts{mstar::parse_backend(backend), threads};
    std::cout << mstar::replay_trace(trace, opts).dump(indent) << "\n";
  } catch (const nlohmann::json::exception& e) {
    std::cerr << "mstar-replay: " << path << ": " << e.what() << "\n";
    return 1;
  } catch (const std::exception& e) {
    std::cerr << "mstar-replay: " << path << ": " << e.what() << "\n";
    return 1;
  }
  return 0;
}
