#include "resources/bounded_kv/memory.h"

namespace mstar {

BoundedKVMemory memory_report(const BoundedKVConfig& c) {
  BoundedKVMemory m;
  m.sink_tokens = c.sink_capacity();
  m.window_tokens = c.window_capacity();
  m.scratch_tokens = c.scratch_tokens();
  m.slot_tokens = c.slot_tokens();
  m.bytes_per_slot = c.slot_bytes_per_layer() * static_cast<std::size_t>(c.num_layers);
  m.total_bytes = c.pool_bytes();
  return m;
}

}  // namespace mstar
