#include "resources/ring_kv/config.h"

#include <limits>

#include "core/check_ranges.h"
#include "core/format_value.h"
#include "core/errors.h"

namespace mstar {

void RingKVConfig::validate(std::string_view where) const {
  check_ranges(*this, where);
  if (static_cast<int64_t>(layers.size()) != num_layers)
    throw ConfigError(fmt::format("{}: layers has {} geometries but num_layers is {}", where, layers.size(),
                                  num_layers));
  for (size_t l = 0; l < layers.size(); ++l) {
    const RingGeometry& g = layers[l];
    if (g.ring_frames <= 0)
      throw ConfigError(fmt::format("{}: layers[{}].ring_frames must be positive, got {}", where, l, g.ring_frames));
    if (g.ring_buckets <= 0 || g.ring_buckets > g.ring_frames)
      throw ConfigError(fmt::format("{}: layers[{}].ring_buckets must be in [1, ring_frames = {}], got {}", where, l,
                                    g.ring_frames, g.ring_buckets));
    if (g.pinned_dilation < 1)
      throw ConfigError(fmt::format("{}: layers[{}].pinned_dilation must be at least 1, got {}", where, l,
                                    g.pinned_dilation));
    // Every size below must fit: slots per layer and bytes of the buffer.
    int64_t slots = 0, bytes = 0;
    if (__builtin_mul_overflow(g.ring_frames + 1, tokens_per_frame, &slots) ||
        __builtin_mul_overflow(slots, total_sessions(), &slots) ||
        __builtin_mul_overflow(slots, 2 * num_kv_heads * head_dim, &bytes) ||
        __builtin_mul_overflow(bytes, static_cast<int64_t>(dtype_size(dtype)), &bytes) || bytes > (int64_t{1} << 50))
      throw ConfigError(fmt::format("{}: layers[{}] would need more than 2^50 bytes ({} sessions of {} frames of {} "
                                    "tokens)",
                                    where, l, total_sessions(), g.ring_frames + 1, tokens_per_frame));
  }
}

int64_t RingKVConfig::capacity(int64_t layer) const {
  return (layers[static_cast<size_t>(layer)].ring_frames + 1) * tokens_per_frame;
}

std::size_t RingKVConfig::layer_bytes(int64_t layer) const {
  return static_cast<std::size_t>(2 * num_kv_heads * total_slots(layer) * head_dim) * dtype_size(dtype);
}

}  // namespace mstar

fmt::format_context::iterator fmt::formatter<mstar::RingKVConfig>::format(const mstar::RingKVConfig& c,
                                                                         format_context& ctx) const {
  return fmt::formatter<std::string>::format(fmt::format("RingKVConfig{{{}}}", mstar::format_fields(c)), ctx);
}
