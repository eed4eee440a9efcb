#pragma once
// The ring's memory for a geometry, computed without allocating anything:
// what mstar-check prints and what RingKVManager::memory_bytes must equal
// (bounded_kv/memory.h is its counterpart).
#include <cstdint>
#include <string>
#include <vector>

#include "resources/ring_kv/config.h"

namespace mstar {

struct RingLayerMemory {
  int64_t layer = 0;
  RingGeometry geometry;
  int64_t capacity = 0;     // token slots per session, scratch included
  int64_t total_slots = 0;  // every session, the padding one included
  std::size_t bytes = 0;    // K and V storage
};

// Layers that share a geometry, labelled local (stride 1) or global.
struct RingMemoryGroup {
  std::string kind;  // "local" or "global"
  RingGeometry geometry;
  std::vector<int64_t> layers;
  int64_t frames_per_session = 0;  // frame slots each session holds per layer (ring + scratch)
  std::size_t bytes = 0;           // over the group's layers
};

struct RingKVMemory {
  std::vector<RingLayerMemory> layers;
  std::vector<RingMemoryGroup> groups;  // in order of first layer
  std::size_t bytes_per_session = 0;    // one session over every layer
  std::size_t total_bytes = 0;          // every session and the padding one
};

// The config must be valid.
RingKVMemory memory_report(const RingKVConfig& config);

}  // namespace mstar
