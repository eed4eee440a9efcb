#include "resources/ring_kv/layout.h"

namespace mstar {

RingTarget ring_target(const RingGeometry& g, int64_t frame) {
  const int64_t d = g.pinned_dilation;
  const int64_t bucket = (frame + d - 1) / d;  // ceil(frame / d)
  return {bucket % g.ring_buckets, frame % d == 0};
}

void visible_ranges(const RingGeometry& g, int64_t tokens_per_frame, int64_t session_start,
                    const uint8_t* written, const RingTarget& target, std::vector<kernels::RingRange>& out) {
  const int64_t T = tokens_per_frame;
  int64_t run = -1;  // first frame slot of the open run
  for (int64_t f = 0; f <= g.ring_frames; ++f) {
    // The slot this frame is about to overwrite holds the frame leaving the horizon.
    const bool vis = written[f] && !(target.write_step && f == target.slot);
    if (vis && run < 0) run = f;
    if ((!vis || f == g.ring_frames) && run >= 0) {
      const int64_t end = vis ? f + 1 : f;
      out.push_back({session_start + run * T, (end - run) * T});
      run = -1;
    }
  }
}

}  // namespace mstar
