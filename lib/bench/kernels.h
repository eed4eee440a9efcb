#pragma once
// Kernel benchmarks on the shapes other engines' attention benchmarks use:
// head dim, query heads, KV heads, KV length, query tokens per row, batch,
// KV dtype, threads. Bounded attention reads each row's KV in place from its
// slot (decode: one query token per row; chunk: 16 to 256); ring attention
// upserts one frame per row and attends to its session's visible slots.
#include <cstdint>
#include <string>
#include <vector>

#include "kernels/backend.h"
#include "core/dtype.h"

namespace mstar::bench {

struct KernelShape {
  std::string kind = "decode";  // decode | chunk | ring
  int64_t head_dim = 128;
  int64_t q_heads = 16;
  int64_t kv_heads = 4;
  int64_t kv_len = 4096;   // window entries each row reads (bounded); ring: ring frames x tokens per frame
  int64_t sink = 0;        // bounded: sink entries read before the window (a second range)
  int64_t q_tokens = 1;    // query tokens per row (decode: 1); ring: tokens per frame
  int64_t batch = 1;
  DType dtype = DType::bf16;
  int threads = 1;
};

struct KernelResult {
  KernelShape shape;
  Backend backend = Backend::cpu;
  bool cold = false;
  double median_us = 0, min_us = 0, max_us = 0;
  int64_t kv_bytes = 0;  // KV read per call
  double gbs = 0;        // kv_bytes / median
  double flops = 0;      // multiply-adds x 2 of q.k and p.v per call
  double gflops = 0;     // flops / median
};

// Throws ConfigError naming the options when a shape cannot run: a size
// below 1, offsets past the kernels' int32, or more memory than the backend
// has on this machine (computed before anything is allocated).
void check_kernel_shape(const KernelShape& s, Backend backend);

// Hot: the same KV every call (it may sit in cache). Cold: a pool several
// times the last-level cache, rows' slots rotated every call.
KernelResult bench_kernel(const KernelShape& s, Backend backend, bool cold, int repeats, int64_t llc_bytes);

}  // namespace mstar::bench
