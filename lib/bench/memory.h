#pragma once
// The machine's memory bandwidth, STREAM-style: copy (c = a) and triad
// (a = b + s * c) over arrays far larger than the caches, all threads, best
// and median of repeats. Every kernel figure is set beside the triad. The
// host also measures a read of one array (no writes), the ceiling of a
// kernel that only streams in, as attention and the decode products do:
// each thread's share walked once as one stream (read) and once as
// kReadStreams runs at once (read4), which one core reads faster on some
// machines (on a Zen 3, 20.6-24.9 GB/s against 16.4-18.9 on 2 threads).
#include <cstdint>
#include <string>

#include "core/buffer.h"

namespace mstar::bench {

constexpr int64_t kReadStreams = 4;

struct Bandwidth {
  double copy_gbs = 0, triad_gbs = 0, read_gbs = 0, read4_gbs = 0;  // best of the repeats (as STREAM reports)
  double copy_median_gbs = 0, triad_median_gbs = 0, read_median_gbs = 0, read4_median_gbs = 0;
  int64_t array_bytes = 0;
  int threads = 0;
};

Bandwidth measure_bandwidth(int threads, int64_t array_bytes, int repeats);

// The two reads alone, over an array of its own, as often as asked: what
// the interleaved roofline (engine_bench.h) sets each decode step beside,
// the moment before it.
class ReadProbe {
 public:
  ReadProbe(int threads, int64_t array_bytes);
  struct Reads {
    double read_gbs = 0, read4_gbs = 0;
  };
  [[nodiscard]] Reads measure() const;

 private:
  int threads_;
  int64_t n_;     // doubles in the array
  HostBuffer b_;  // [n_] f64 (held as 2 * n_ f32), every element 2.0
};

// The CUDA device's bandwidth, the same two figures over three device arrays
// of array_bytes: copy (cudaMemcpyAsync device to device, read and write
// counted) and triad (a kernel). Throws ConfigError, saying why, when this
// binary has no CUDA backend or no GPU is visible.
struct DeviceBandwidth {
  double copy_gbs = 0, triad_gbs = 0;
  double copy_median_gbs = 0, triad_median_gbs = 0;
  int64_t array_bytes = 0;
  std::string device;
};

DeviceBandwidth measure_device_bandwidth(int64_t array_bytes, int repeats);

}  // namespace mstar::bench
