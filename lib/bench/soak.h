#pragma once
// mstar-bench soak: one engine run for minutes on end under random arrivals,
// cancellations, malformed and refused requests, duplicate ids, snapshots
// and resumes, sampled every second. It fails when
//  - a request is lost: every submission (request, bad line, resume) must
//    end in exactly one done or error event;
//  - a slot or session is not returned: when the engine is idle at the end,
//    none is in use and no request is registered;
//  - resident memory grows: its level (the median of each minute after the
//    warm-up, memory_levels below) may not rise above the first minute's by
//    more than growth_limit (1%).
// Beside resident memory it samples what the program holds through malloc,
// which tells a leak (both grow) from memory the allocator keeps.
#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

#include "bench/report.h"
#include "config/deployment.h"

namespace mstar::bench {

struct SoakOptions {
  double minutes = 1;
  double warmup_minutes = 1;  // capped at a fifth of the run
  uint64_t seed = 1;
  double growth_limit = 0.01;
};

struct SoakSample {
  double seconds = 0;
  int64_t steps = 0;                 // the engine's steps so far
  int64_t rss_bytes = 0;
  int64_t heap_bytes = -1;           // held through malloc (core/heap.h); -1: not known
  int64_t in_use = 0, capacity = 0;  // slots or sessions, every resource summed
  int64_t running = 0, waiting = 0;
  int64_t produced = 0;              // tokens or frames so far
  int64_t submitted = 0, ended = 0;  // submissions so far, and their endings
};

// The level of resident memory after the warm-up: the median of the samples
// in each window of `window_steps` engine steps from step `warm` to step
// `end` (the last, shorter window counts when it spans half a window). A
// leak raises every later window's median; a buffer that comes and goes
// moves only the samples that meet it. Windows are counted in steps, not
// seconds, because what the traffic holds is held for a number of steps (a
// resumed stream's states while it waits for admission): in seconds, a
// slower machine holds the same buffer through more of a window, and a
// flat run read as growth on a loaded machine.
struct MemoryLevels {
  int64_t base = 0;           // the first window's median, bytes
  int64_t high = 0;           // the highest window median, bytes
  int64_t high_from_step = 0;  // where that window starts
  int windows = 0;
  double growth() const { return base > 0 ? static_cast<double>(high) / static_cast<double>(base) - 1 : 0.0; }
};

struct SoakResult {
  std::vector<SoakSample> samples;
  int64_t steps = 0, produced = 0;
  int64_t submitted = 0, done = 0, cancelled = 0, failed = 0;
  int64_t bad = 0, duplicates = 0, snapshots = 0, snapshot_errors = 0, resumed = 0;
  // Peaks, in bytes, reported and not judged: they are the buffers of
  // operations in flight at a sampled second (a snapshot being written, a
  // resumed stream's states waiting), so they come and go, and the highest
  // of a longer run is higher however flat the memory.
  int64_t rss_warm_peak = 0, rss_after_peak = 0;
  int64_t heap_warm_peak = -1, heap_after_peak = -1;  // held through malloc
  MemoryLevels rss_level;                             // what the rule judges
  std::vector<std::string> problems;                  // empty: the soak passed
};

SoakResult soak(const ResolvedDeployment& d, const SoakOptions& options);

// The levels of `samples`, as MemoryLevels says.
MemoryLevels memory_levels(const std::vector<SoakSample>& samples, int64_t warm, int64_t end, int64_t window_steps);

// The per-second samples as CSV, the summary as a table, and the curves
// (resident memory and what malloc holds; slots in use) as SVG.
std::string soak_csv(const SoakResult& r);
Table soak_table(const SoakResult& r, const SoakOptions& options);
std::string soak_svg(const SoakResult& r, const std::string& title);

}  // namespace mstar::bench
