// mstar-demo: streams voice-prompt-like requests through the bounded cache
// (see lib/engine/bounded_demo.h) and prints memory and throughput.
#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include "core/errors.h"
#include "engine/bounded_demo.h"

int main(int argc, char** argv) {
  CLI::App app{"Stream requests through mstar's bounded KV cache (sink + window)"};
  mstar::BoundedDemoOptions o;
  std::string backend = "cpu", dtype = "bf16";
  app.add_option("--backend", backend, "reference or cpu")->check(CLI::IsMember({"reference", "cpu"}));
  app.add_option("--threads", o.threads, "threads for the cpu backend")->check(CLI::PositiveNumber);
  app.add_option("--requests", o.requests, "requests to stream")->check(CLI::PositiveNumber);
  app.add_option("--slots", o.max_slots, "slots in the pool (requests resident at once)")->check(CLI::PositiveNumber);
  app.add_option("--tokens", o.tokens, "entries each request decodes")->check(CLI::PositiveNumber);
  app.add_option("--window", o.window, "sliding window")->check(CLI::NonNegativeNumber);
  app.add_option("--sink", o.sink, "attention sinks")->check(CLI::NonNegativeNumber);
  app.add_option("--dtype", dtype, "cache dtype: f32, f16 or bf16");
  app.add_option("--seed", o.seed, "random seed");
  CLI11_PARSE(app, argc, argv);
  try {
    o.backend = mstar::parse_backend(backend, "--backend");
    o.dtype = mstar::parse_dtype(dtype, "--dtype");
    const auto r = mstar::run_bounded_demo(o, stdout);
    fmt::print("\n{} requests, {} steps, {} entries written in {:.2f} s ({:.0f} entries/s, backend {})\n", o.requests,
               r.steps, r.entries, r.seconds, static_cast<double>(r.entries) / r.seconds, backend);
    fmt::print("KV memory: {} bytes after the first step, {} after the last ({})\n", r.memory_first, r.memory_last,
               r.memory_first == r.memory_last ? "unchanged" : "CHANGED");
    fmt::print("peak slots in use: {} of {}; admission waits: {} request-steps\n", r.peak_slots, o.max_slots,
               r.admission_waits);
    return r.memory_first == r.memory_last ? 0 : 1;
  } catch (const std::exception& e) {
    fmt::print(stderr, "mstar-demo: {}\n", e.what());
    return 1;
  }
}
