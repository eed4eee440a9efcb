// mstar-bench memory: the memory's bandwidth, host (copy, triad and reads,
// all threads) or the GPU's (copy and triad).
#include <cstdint>
#include <iostream>
#include <memory>
#include <string>

#include <fmt/format.h>

#include "../cli.h"
#include "bench/memory.h"
#include "core/checked.h"
#include "resources/options.h"
#include "subcommand.h"

namespace mstar::bench::command {

namespace {

struct MemoryOptions {
  int threads = 2, repeats = 5;
  int64_t mib = 512;
  std::string backend = "cpu";
};

int run_memory(const MemoryOptions& o, const Context& c) {
  // Three arrays of --mib each, checked before they are allocated (the
  // GPU's allocator refuses what its memory cannot hold).
  const auto bytes = checked_product({3, o.mib, int64_t{1} << 20});
  check_fits_memory(fmt::format("--mib {} (three arrays)", o.mib), bytes.value_or(UINT64_MAX),
                    o.backend == "cuda" ? Backend::cuda : Backend::cpu);
  if (o.backend == "cuda") {
    const DeviceBandwidth b = measure_device_bandwidth(o.mib << 20, o.repeats);
    Table t{{"device", "array_mib", "copy_gbs", "triad_gbs", "copy_median_gbs", "triad_median_gbs"},
            {{b.device, b.array_bytes >> 20, b.copy_gbs, b.triad_gbs, b.copy_median_gbs, b.triad_median_gbs}}};
    std::cout << render(t, c.format);
  } else {
    const Bandwidth b = measure_bandwidth(o.threads, o.mib << 20, o.repeats);
    Table t{{"threads", "array_mib", "copy_gbs", "triad_gbs", "read_gbs", "read4_gbs", "copy_median_gbs",
             "triad_median_gbs", "read_median_gbs", "read4_median_gbs"},
            {{b.threads, b.array_bytes >> 20, b.copy_gbs, b.triad_gbs, b.read_gbs, b.read4_gbs, b.copy_median_gbs,
              b.triad_median_gbs, b.read_median_gbs, b.read4_median_gbs}}};
    std::cout << render(t, c.format);
  }
  return mstar::cli::kOk;
}

}  // namespace

void add_memory(CLI::App& app, Subcommands& out) {
  auto [memory, o] = add_subcommand(
      app, out, "memory",
      "STREAM-style copy and triad bandwidth and a read, all threads (or the GPU's copy and triad)", run_memory);
  memory->add_option("--threads", o->threads, "threads")->check(CLI::Range(1, 1024));
  memory->add_option("--mib", o->mib, "MiB per array (far beyond the caches)")->check(CLI::PositiveNumber);
  memory->add_option("--repeats", o->repeats, "repeats")->check(CLI::PositiveNumber);
  memory->add_option("--backend", o->backend, "cpu (host memory) or cuda (the GPU's memory)")
      ->check(CLI::IsMember({"cpu", "cuda"}));
}

}  // namespace mstar::bench::command
