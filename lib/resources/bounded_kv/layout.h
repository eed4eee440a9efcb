#pragma once
// A row's layout for one step: which stored entries it reads (in stream
// order) and where the step's own entries go. Pure host arithmetic over the
// declared position; no buffer in sight, so it is tested against brute force
// directly (tests/test_bounded_layout.cpp).
#include <cstdint>

#include "kernels/bounded_kv.h"
#include "resources/bounded_kv/config.h"

namespace mstar {

struct RowLayout {
  kernels::BoundedRowTable table;
  // Stream position of each range's first entry, for tests and debugging;
  // kernels never need it.
  int64_t read_stream_start[5] = {};
  int64_t write_stream_start[3] = {};
};

struct RowGeometry {
  int64_t sink_capacity = 0;   // slot offsets [0, sink_capacity) hold the sink's written part
  bool reverse_step_order = false;
};

// The layout of a row at `pos` that writes `span` entries under `policy`.
// The slot index is the caller's; the table's slot is set to `slot`.
RowLayout plan_row(const RowGeometry& geo, const SinkWindow& policy, const StreamPosition& pos, int64_t span,
                   int32_t slot);

// Ring index of stream entry `pos` (pos >= sink, window > 0).
inline int64_t ring_index(int64_t pos, const SinkWindow& policy) { return (pos - policy.sink) % policy.window; }

}  // namespace mstar
