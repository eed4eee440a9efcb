#pragma once
// The machine's memory bandwidth, STREAM-style: copy (c = a) and triad
// (a = b + s * c) over arrays far larger than the caches, all threads, best
// and median of repeats. Every kernel figure is set beside it.
#include <cstdint>

namespace mstar::bench {

struct Bandwidth {
  double copy_gbs = 0, triad_gbs = 0;                // best of the repeats (as STREAM reports)
  double copy_median_gbs = 0, triad_median_gbs = 0;
  int64_t array_bytes = 0;
  int threads = 0;
};

Bandwidth measure_bandwidth(int threads, int64_t array_bytes, int repeats);

}  // namespace mstar::bench
