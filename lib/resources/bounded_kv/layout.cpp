#include "resources/bounded_kv/layout.h"

#include <algorithm>

#include "core/errors.h"

namespace mstar {

namespace {

int32_t i32(int64_t v) {
  MSTAR_ASSERT(v >= 0 && v <= INT32_MAX, fmt::format("layout value {} does not fit the int32 table", v));
  return static_cast<int32_t>(v);
}

}  // namespace

RowLayout plan_row(const RowGeometry& geo, const SinkWindow& policy, const StreamPosition& pos, int64_t span,
                   int32_t slot) {
  MSTAR_ASSERT(span >= 0 && pos.written >= 0 && pos.source_len >= 0, "plan_row: negative span or position");
  RowLayout out;
  out.table.slot = slot;
  const int64_t L = pos.source_len;
  const int64_t n = L + pos.written;  // entries in the stream before the step
  const int64_t sink = policy.sink, window = policy.window;
  const int64_t W = policy.window_includes_step ? window - span : window;
  int nr = 0;
  auto read = [&](bool from_source, int64_t start_offset, int64_t stream_start, int64_t len) {
    if (len <= 0) return;
    MSTAR_ASSERT(nr < 5, "more than five read ranges");
    out.table.reads[nr] = {from_source ? 1 : 0, i32(start_offset), i32(len)};
    out.read_stream_start[nr++] = stream_start;
  };

  // 1. Sink, source part: [0, min(sink, L)) read in place.
  read(true, 0, 0, std::min(sink, L));
  // 2. Sink, written part: [L, min(sink, n)) at slot offset pos - L.
  read(false, 0, L, std::min(sink, n) - L);
  // 3. Window, source part: [lo, L).
  const int64_t lo = W > 0 ? std::max(sink, n - W) : n;  // W <= 0: the window reads nothing
  if (lo < L) read(true, lo, lo, L - lo);
  // 4. Window, ring: [max(lo, L), n), at most two ranges when the ring wraps.
  const int64_t ring_first = std::max(lo, L);
  if (ring_first < n) {
    MSTAR_ASSERT(window > 0 && n - ring_first <= window, "ring read longer than the window");
    const int64_t idx = ring_index(ring_first, policy);
    const int64_t first_len = std::min(n - ring_first, window - idx);
    read(false, geo.sink_capacity + idx, ring_first, first_len);
    read(false, geo.sink_capacity, ring_first + first_len, n - ring_first - first_len);
  }

  int nw = 0;
  // Stream entry n + j is step entry j, or span - 1 - j in reverse order.
  auto write = [&](int64_t stream_start, int64_t slot_offset, int64_t len) {
    if (len <= 0) return;
    MSTAR_ASSERT(nw < 3, "more than three write ranges");
    const int64_t j = stream_start - n;
    kernels::KVWrite w;
    w.fresh = i32(geo.reverse_step_order ? span - 1 - j : j);
    w.fresh_step = geo.reverse_step_order ? -1 : 1;
    w.start = i32(slot_offset);
    w.len = i32(len);
    out.table.writes[nw] = w;
    out.write_stream_start[nw++] = stream_start;
  };
  // Sink: [n, min(sink, n + span)) at slot offset pos - L.
  if (n < sink) write(n, n - L, std::min(sink, n + span) - n);
  // Ring: the last `window` non-sink entries of the step.
  if (window > 0) {
    const int64_t first = std::max({sink, n, n + span - window});
    if (first < n + span) {
      const int64_t idx = ring_index(first, policy);
      const int64_t count = n + span - first;
      const int64_t first_len = std::min(count, window - idx);
      write(first, geo.sink_capacity + idx, first_len);
      write(first + first_len, geo.sink_capacity, count - first_len);
    }
  }
  return out;
}

}  // namespace mstar
