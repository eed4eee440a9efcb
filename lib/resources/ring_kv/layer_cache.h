#pragma once
// One attention layer's ring: ring_frames frame slots of history plus one
// scratch frame at the tail, for each resident session and the shared
// padding session. Storage is one [2, H_kv, total_slots, D] buffer (K and V
// stacked), so a commit is one write and a read is two views with no copy.
#include <cstdint>
#include <span>
#include <utility>
#include <vector>

#include "core/buffer.h"
#include "resources/ring_kv/config.h"

namespace mstar {

struct UpsertOptions {
  bool commit = false;            // write the frame to its ring slot (when the clock says so) and keep it
  bool build_visibility = true;   // return each row's visibility row
};

// What upsert returns: views over the whole buffer (every session) and, when
// asked, each row's visibility row, zero outside its own session.
struct RingUpsert {
  ConstTensorView keys;            // [H_kv, total_slots, D]
  ConstTensorView values;          // [H_kv, total_slots, D]
  std::vector<uint8_t> visible;    // [B, total_slots] (empty unless asked)
  std::vector<int64_t> span_lo, span_hi;  // [B]: each row's session span
};

// One session's contents in one layer, restorable into the same geometry.
struct RingLayerState {
  HostBuffer kv;                 // [2, H_kv, capacity, D]
  std::vector<uint8_t> written;  // [capacity]
};

class LayerRingCache {
 public:
  // total_sessions counts the padding session too.
  LayerRingCache(int64_t total_sessions, int64_t n_kv_heads, const RingGeometry& geometry, int64_t head_dim,
                 int64_t tokens_per_frame, DType dtype);

  int64_t capacity() const { return (geo_.ring_frames + 1) * T_; }
  int64_t total_slots() const { return sessions_ * capacity(); }
  const RingGeometry& geometry() const { return geo_; }
  // [lo, hi) token slots owned by `session`.
  std::pair<int64_t, int64_t> session_span(int64_t session) const;
  // Drops one session's state (zeroes it) and re-arms its scratch frame.
  void reset(int64_t session);
  // Resident bytes of K and V (the written flags are noise beside them).
  std::size_t memory_bytes() const { return kv_.bytes(); }

  // One frame of each of B sessions: kv is [2, H_kv, B * T, D] f32 (row b's
  // tokens at [b*T, (b+1)*T)), frame_pos and session are [B]. The frame
  // lands in its session's scratch frame; with commit it is also written to
  // its ring slot when frame_pos is a multiple of the dilation.
  RingUpsert upsert(ConstTensorView kv, std::span<const int64_t> frame_pos, std::span<const int32_t> session,
                    const UpsertOptions& options);

  RingLayerState copy_session(int64_t session) const;
  // Throws InputError naming the shapes when the state is not this geometry's.
  void load_session(int64_t session, const RingLayerState& state, int64_t layer);
  // True when the session is as reset left it: zeros, only the scratch written.
  bool is_pristine(int64_t session) const;

  ConstTensorView keys() const;
  ConstTensorView values() const;
  const std::vector<uint8_t>& written() const { return written_; }

 private:
  // The first token slot of frame slot `frame` (ring_frames = scratch) of a session.
  int64_t frame_start(int64_t session, int64_t frame) const { return session * capacity() + frame * T_; }
  void store_frame(const float* kv_rows, int64_t b, int64_t B, int64_t dst_slot);

  int64_t sessions_, H_, D_, T_;
  RingGeometry geo_;
  DType dtype_;
  HostBuffer kv_;                 // [2, H_kv, total_slots, D]
  std::vector<uint8_t> written_;  // [total_slots]
};

}  // namespace mstar
