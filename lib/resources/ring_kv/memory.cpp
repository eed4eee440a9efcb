#include "resources/ring_kv/memory.h"

namespace mstar {

RingKVMemory memory_report(const RingKVConfig& c) {
  RingKVMemory r;
  for (int64_t l = 0; l < c.num_layers; ++l) {
    const RingGeometry& g = c.layers[static_cast<size_t>(l)];
    RingLayerMemory m{l, g, c.capacity(l), c.total_slots(l), c.layer_bytes(l)};
    r.layers.push_back(m);
    r.total_bytes += m.bytes;
    r.bytes_per_session += m.bytes / static_cast<std::size_t>(c.total_sessions());
    RingMemoryGroup* group = nullptr;
    for (auto& gr : r.groups)
      if (gr.geometry == g) group = &gr;
    if (!group) {
      r.groups.push_back(RingMemoryGroup{g.is_local() ? "local" : "global", g, {}, g.ring_frames + 1, 0});
      group = &r.groups.back();
    }
    group->layers.push_back(l);
    group->bytes += m.bytes;
  }
  return r;
}

}  // namespace mstar
