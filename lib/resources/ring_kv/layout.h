#pragma once
// Where a frame goes and what it sees, per layer: pure arithmetic over the
// geometry and the book's written flags (../shared/design/kv-semantics.md,
// "Ring KV"), tested without a buffer.
#include <cstdint>
#include <vector>

#include "resources/ring_kv/config.h"
#include "kernels/ring_kv.h"

namespace mstar {

// The ring slot frame `frame` is written to, and whether this frame writes at
// all: bucket = ceil(frame / dilation), slot = bucket mod ring_buckets, and
// only frames that are multiples of the dilation write.
struct RingTarget {
  int64_t slot = 0;
  bool write_step = false;
};
RingTarget ring_target(const RingGeometry& g, int64_t frame);

// The token-slot runs a frame of `session` sees in a layer whose frame slots
// (ring_frames + 1, the scratch last) are marked in `written`: every written
// frame slot, the scratch included, except the slot this frame is about to
// overwrite. Runs of adjacent frame slots merge; ranges are in slot order.
void visible_ranges(const RingGeometry& g, int64_t tokens_per_frame, int64_t session_start,
                    const uint8_t* written, const RingTarget& target, std::vector<kernels::RingRange>& out);

}  // namespace mstar
