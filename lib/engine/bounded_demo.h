#pragma once
// A small streaming run through the bounded cache, until mstar-run and the
// models exist: voice-prompt-like requests (a shared source per voice, a
// causal prefill, then one entry per step) join and leave a continuously
// batched loop that admits, plans, attends every layer and commits. The
// numbers attended are random (there is no model yet); what the demo shows
// is the cache: admission waits when slots run out, and a memory footprint
// that does not move however long the streams run.
#include <cstdint>
#include <cstdio>
#include <string>

#include "backend.h"
#include "core/dtype.h"

namespace mstar {

struct BoundedDemoOptions {
  Backend backend = Backend::cpu;
  int threads = 2;
  int requests = 12;
  int64_t max_slots = 8;
  int64_t tokens = 600;  // entries each request decodes after its prefill
  int64_t prefill = 16;
  int64_t layers = 2;
  int64_t kv_heads = 4;
  int64_t q_heads = 8;
  int64_t head_dim = 64;
  int64_t sink = 4;
  int64_t window = 128;
  DType dtype = DType::bf16;
  uint64_t seed = 1;
};

struct BoundedDemoReport {
  int64_t steps = 0;
  int64_t entries = 0;            // entries written by all requests
  int64_t admission_waits = 0;    // steps a request spent refused for now
  int64_t peak_slots = 0;
  std::size_t memory_first = 0;   // memory_bytes after the first step
  std::size_t memory_last = 0;    // and after the last
  double seconds = 0;
};

// Prints one line per joining and finishing request to `log`.
BoundedDemoReport run_bounded_demo(const BoundedDemoOptions& options, std::FILE* log);

}  // namespace mstar
