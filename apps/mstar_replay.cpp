// mstar-replay TRACE.json [--backend reference|cpu|cuda] [--threads N]
// Replays a JSON trace through a KV resource and prints, as JSON, each step's
// admit outcome and every row's attention output (docs/replay-format.md).

#include <CLI/CLI.hpp>

#include "cli.h"
#include "core/files.h"
#include "core/json_text.h"
#include "engine/replay.h"

int main(int argc, char** argv) {
  CLI::App app{"Replay a JSON trace through an mstar KV resource"};
  std::string path, backend = "cpu";
  int threads = 1, indent = -1;
  app.add_option("trace", path, "trace file (JSON)")->required();
  app.add_option("--backend", backend, "reference, cpu or cuda")->check(CLI::IsMember({"reference", "cpu", "cuda"}));
  app.add_option("--threads", threads, "threads for the cpu backend")->check(CLI::Range(1, 1024));
  app.add_option("--indent", indent, "pretty-print with this indent")->check(CLI::Range(-1, 16));
  if (auto rc = mstar::cli::parse(app, argc, argv)) return *rc;
  return mstar::cli::guarded("mstar-replay", [&] {
    const auto trace = mstar::parse_json(mstar::read_file(path, mstar::kMaxTraceBytes, path), path);
    nlohmann::json result;
    try {
      const mstar::ReplayOptions opts{mstar::parse_backend(backend), threads};
      result = mstar::replay_trace(trace, opts);
    } catch (const mstar::InputError& e) {
      throw mstar::InputError(fmt::format("{}: {}", path, e.what()));
    } catch (const mstar::ConfigError& e) {
      throw mstar::ConfigError(fmt::format("{}: {}", path, e.what()));
    }
    mstar::OutputFile out = mstar::OutputFile::standard_output();
    out.write(mstar::dump_json(result, indent) + "\n");
    out.close();
    return mstar::cli::kOk;
  });
}
