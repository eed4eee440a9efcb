// The layout table against brute force: a model of the slot that records
// which stream position each offset holds, driven by the table's own writes,
// must serve exactly the retained positions to the table's reads.
#include <doctest/doctest.h>

#include <algorithm>
#include <set>

#include "resources/bounded_kv/layout.h"
#include "support.h"

using namespace mstar;

namespace {

// Retained positions of a stream of n entries, straight from the definition:
// the first `sink` and the last W, W = window (or window - span when the
// window counts the step's own entries).
std::vector<int64_t> retained(int64_t n, const SinkWindow& p, int64_t span) {
  const int64_t W = p.window_includes_step ? p.window - span : p.window;
  std::vector<int64_t> out;
  for (int64_t pos = 0; pos < n; ++pos)
    if (pos < p.sink || (W > 0 && pos >= n - W)) out.push_back(pos);
  return out;
}

struct Trial {
  SinkWindow policy;
  int64_t source_len;
  int64_t extra_sink_capacity;  // capacity other source lengths need
  bool reverse;
};

void run_stream(const Trial& t, test::Rng& rng, int steps) {
  const RowGeometry geo{std::max<int64_t>(0, t.policy.sink - t.source_len) + t.extra_sink_capacity, t.reverse};
  const int64_t slot_tokens = geo.sink_capacity + t.policy.window;
  std::vector<int64_t> slot(static_cast<size_t>(slot_tokens), -1);  // stream position held at each offset
  int64_t written = 0;
  for (int s = 0; s < steps; ++s) {
    const int64_t span = rng.uniform(0, 3 * t.policy.window + 3);
    const int64_t n = t.source_len + written;
    CAPTURE(t.policy.sink);
    CAPTURE(t.policy.window);
    CAPTURE(t.policy.window_includes_step);
    CAPTURE(t.source_len);
    CAPTURE(t.reverse);
    CAPTURE(n);
    CAPTURE(span);
    const RowLayout lay = plan_row(geo, t.policy, StreamPosition{t.source_len, written, 0}, span, 3);
    REQUIRE(lay.table.slot == 3);

    // Reads: exactly the retained positions, in stream order, each found
    // where the model says it lives.
    std::vector<int64_t> seen;
    for (int i = 0; i < 5; ++i) {
      const kernels::KVRead& r = lay.table.reads[i];
      for (int32_t k = 0; k < r.len; ++k) {
        const int64_t pos = lay.read_stream_start[i] + k;
        seen.push_back(pos);
        if (r.from_source) {
          CHECK(pos < t.source_len);
          CHECK(r.start + k == pos);  // source entry p sits at source offset p
        } else {
          REQUIRE(r.start + k < slot_tokens);
          CHECK(slot[static_cast<size_t>(r.start + k)] == pos);
        }
      }
    }
    CHECK(seen == retained(n, t.policy, span));

    // Writes: exactly the step entries a later step may read, each from the
    // step entry that becomes that stream position.
    std::set<int64_t> kept, stored;
    for (int64_t pos = n; pos < n + span; ++pos) {
      const bool sink = pos < t.policy.sink;
      const bool ring = t.policy.window > 0 && pos >= std::max(t.policy.sink, n + span - t.policy.window);
      if (sink || ring) kept.insert(pos);
    }
    for (int i = 0; i < 3; ++i) {
      const kernels::KVWrite& w = lay.table.writes[i];
      for (int32_t k = 0; k < w.len; ++k) {
        const int64_t j = w.fresh + static_cast<int64_t>(k) * w.fresh_step;
        REQUIRE(j >= 0);
        REQUIRE(j < span);
        const int64_t pos = n + (t.reverse ? span - 1 - j : j);
        CHECK(pos == lay.write_stream_start[i] + k);
        REQUIRE(w.start + k >= 0);
        REQUIRE(w.start + k < slot_tokens);
        slot[static_cast<size_t>(w.start + k)] = pos;
        CHECK(stored.insert(pos).second);  // no entry written twice
      }
    }
    CHECK(stored == kept);
    written += span;
  }
}

}  // namespace

TEST_CASE("layout against brute force: random sources, policies and spans") {
  test::Rng rng(7);
  for (int trial = 0; trial < 400; ++trial) {
    Trial t;
    t.policy.sink = rng.uniform(0, 12);
    t.policy.window = rng.uniform(0, 11);
    t.policy.window_includes_step = rng.coin();
    t.source_len = rng.coin(0.3) ? 0 : rng.uniform(1, 15);  // sinks inside and beyond the source
    t.extra_sink_capacity = rng.coin(0.3) ? rng.uniform(1, 3) : 0;
    t.reverse = rng.coin(0.3);
    run_stream(t, rng, 25);
  }
}

TEST_CASE("layout edge cases: window 0, span longer than the window, read-only steps") {
  test::Rng rng(11);
  for (int64_t window : {0, 1, 5}) {
    for (int64_t sink : {0, 3}) {
      for (bool inc : {false, true}) {
        Trial t{SinkWindow{sink, window, inc}, 2, 0, false};
        run_stream(t, rng, 30);
        t.reverse = true;
        run_stream(t, rng, 30);
      }
    }
  }
  // A step of 3 * window entries with no sink keeps only its last `window`.
  const RowLayout lay = plan_row(RowGeometry{0, false}, SinkWindow{0, 4, false}, StreamPosition{0, 5, 0}, 12, 0);
  int64_t stored = 0;
  for (const auto& w : lay.table.writes) stored += w.len;
  CHECK(stored == 4);
  // The ring index of entry 5 + 8 = 13 is (13 - 0) mod 4 = 1: the first write
  // starts there and wraps.
  CHECK(lay.table.writes[0].start == 1);
  CHECK(lay.table.writes[0].len == 3);
  CHECK(lay.table.writes[1].start == 0);
  CHECK(lay.table.writes[1].len == 1);
}
