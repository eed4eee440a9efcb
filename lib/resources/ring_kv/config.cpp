#include "resources/ring_kv/config.h"

#include <limits>

#include "core/check_ranges.h"
#include "core/checked.h"
#include "core/files.h"
#include "core/format_value.h"
#include "core/errors.h"
#include "resources/kv_dtype.h"
#include "resources/resource.h"

namespace mstar {

void RingKVConfig::validate(std::string_view where) const {
  check_ranges(*this, where);
  check_kv_dtype(dtype, where);
  if (static_cast<int64_t>(layers.size()) != num_layers)
    throw ConfigError(fmt::format("{}: layers has {} geometries but num_layers is {}", where, layers.size(),
                                  num_layers));
  for (size_t l = 0; l < layers.size(); ++l) {
    const RingGeometry& g = layers[l];
    if (g.ring_frames <= 0 || g.ring_frames > INT32_MAX)
      throw ConfigError(fmt::format("{}: layers[{}].ring_frames must be in [1, {}], got {}", where, l, INT32_MAX,
                                    g.ring_frames));
    if (g.ring_buckets <= 0 || g.ring_buckets > g.ring_frames)
      throw ConfigError(fmt::format("{}: layers[{}].ring_buckets must be in [1, ring_frames = {}], got {}", where, l,
                                    g.ring_frames, g.ring_buckets));
    if (g.pinned_dilation < 1 || g.pinned_dilation > (int64_t{1} << 30))
      throw ConfigError(fmt::format("{}: layers[{}].pinned_dilation must be in [1, {}], got {}", where, l,
                                    int64_t{1} << 30, g.pinned_dilation));
  }
  // The rings' bytes, computed before anything is allocated: a size no
  // machine holds is refused here, naming it, not by the allocator.
  uint64_t total = 0, per_session = 0;
  bool fits = true;
  for (const RingGeometry& g : layers) {
    const auto session = checked_product({g.ring_frames + 1, tokens_per_frame, 2, num_kv_heads, head_dim,
                                           static_cast<int64_t>(row_bytes(dtype, 1))});
    fits = fits && session && !__builtin_add_overflow(per_session, *session, &per_session);
  }
  const auto all = fits ? checked_product({static_cast<int64_t>(std::min<uint64_t>(per_session, INT64_MAX)),
                                           total_sessions()})
                        : std::nullopt;
  if (all) total = *all;
  if (!all || total > kMaxResourceBytes)
    throw ConfigError(fmt::format("{}: num_sessions {} needs {} for the rings ({} per session, plus one padding "
                                  "session), over the limit of {} for one resource",
                                  where, num_sessions, all ? bytes_text(total) : std::string("more than 2^64 bytes"),
                                  fits ? bytes_text(per_session) : std::string("more than 2^64 bytes"),
                                  bytes_text(kMaxResourceBytes)));
}

int64_t RingKVConfig::capacity(int64_t layer) const {
  return (layers[static_cast<size_t>(layer)].ring_frames + 1) * tokens_per_frame;
}

std::size_t RingKVConfig::layer_bytes(int64_t layer) const {
  return row_bytes(dtype, 2 * num_kv_heads * total_slots(layer) * head_dim);
}

}  // namespace mstar

fmt::format_context::iterator fmt::formatter<mstar::RingKVConfig>::format(const mstar::RingKVConfig& c,
                                                                         format_context& ctx) const {
  return fmt::formatter<std::string>::format(fmt::format("RingKVConfig{{{}}}", mstar::format_fields(c)), ctx);
}
