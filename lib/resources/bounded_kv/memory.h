#pragma once
// The bounded resource's memory for a config, computed without allocating
// anything: what mstar-check prints and what BoundedKVManager's pool bytes
// must equal (ring_kv/memory.h is its counterpart).
#include <cstddef>
#include <cstdint>

#include "resources/bounded_kv/config.h"

namespace mstar {

struct BoundedKVMemory {
  int64_t sink_tokens = 0;     // the sink's written part
  int64_t window_tokens = 0;   // the window's ring
  int64_t scratch_tokens = 0;  // where a step's entries wait for commit
  int64_t slot_tokens = 0;     // their sum
  std::size_t bytes_per_slot = 0;  // one slot over every layer
  std::size_t total_bytes = 0;     // every slot: fixed at build
};

// The config must be valid.
BoundedKVMemory memory_report(const BoundedKVConfig& config);

}  // namespace mstar
