// ring_attention on the backend under test (on_backend.h) against the
// reference: odd and real head dims, every dtype, query groups, ragged
// visible runs, a row that sees nothing, a Waypoint-sized frame.
//
// Tolerance: as bounded attention's (test_op_bounded_attention.cpp), f32
// against double on O(1) averages: 1e-4 absolute.
#include <doctest/doctest.h>

#include <cmath>
#include <vector>

#include "kernels/ring_kv.h"
#include "on_backend.h"

using namespace mstar;
using namespace mstar::kernels;

namespace {

// Row r's visible runs: random runs inside its span [lo, hi).
void random_ranges(test::Rng& rng, const std::vector<int64_t>& lo, const std::vector<int64_t>& hi, double p_visible,
                   std::vector<int32_t>& indptr, std::vector<RingRange>& ranges) {
  indptr = {0};
  ranges.clear();
  for (size_t r = 0; r < lo.size(); ++r) {
    int64_t run = -1;
    for (int64_t i = lo[r]; i <= hi[r]; ++i) {
      const bool vis = i < hi[r] && rng.coin(p_visible);
      if (vis && run < 0) run = i;
      if (!vis && run >= 0) ranges.push_back({run, i - run}), run = -1;
    }
    indptr.push_back(static_cast<int32_t>(ranges.size()));
  }
}

void check_ring(int32_t D, DType dt, int32_t H, int32_t group, int32_t T, const std::vector<int64_t>& lo,
                const std::vector<int64_t>& hi, int64_t slots, double p_visible, uint64_t seed) {
  test::Rng rng(seed);
  const auto rows = static_cast<int32_t>(lo.size());
  const int32_t Hq = H * group;
  const std::vector<unsigned char> kv = test::random_values(rng, dt, 2 * H * slots * D);
  std::vector<int32_t> indptr;
  std::vector<RingRange> ranges;
  random_ranges(rng, lo, hi, p_visible, indptr, ranges);
  const int64_t q_ts = Hq * D + 1, out_ts = Hq * D + 2;
  const std::vector<float> q = rng.normals(static_cast<size_t>(rows * T * q_ts));
  RingAttentionParams p;
  p.rows = rows;
  p.num_kv_heads = H;
  p.num_q_heads = Hq;
  p.head_dim = D;
  p.q_tokens = T;
  p.kv_dtype = dt;
  p.scale = 1.0f / std::sqrt(static_cast<float>(D));
  p.total_slots = slots;
  p.q_token_stride = q_ts;
  p.q_head_stride = D;
  p.out_token_stride = out_ts;
  p.out_head_stride = D;
  std::vector<float> want(static_cast<size_t>(rows * T * out_ts), -7.0f);
  const RingRange none{};  // the ops want a ranges pointer even when no row sees anything
  RingAttentionParams hp = p;
  hp.kv = kv.data();
  hp.range_indptr = indptr.data();
  hp.ranges = ranges.empty() ? &none : ranges.data();
  hp.q = q.data();
  hp.out = want.data();
  ring_attention(Backend::reference, hp);
  DeviceBuffer dkv = test::upload(kv), dind = test::upload(indptr), drg = test::upload(ranges), dq = test::upload(q),
               dout = test::upload(std::vector<float>(want.size(), -7.0f));
  p.kv = dkv.data();
  p.range_indptr = static_cast<const int32_t*>(dind.data());
  p.ranges = static_cast<const RingRange*>(drg.data());
  p.q = static_cast<const float*>(dq.data());
  p.out = static_cast<float*>(dout.data());
  ring_attention(test::backend_under_test(), p);
  CHECK(test::max_abs_diff(test::download<float>(dout, want.size()), want) <= 1e-4f);
}

}  // namespace

TEST_CASE("ring attention: odd and real head dims, every dtype, query groups, against the reference") {
  for (int32_t D : {17, 54, 97, 64, 128, 200})
    for (DType dt : {DType::f32, DType::f16, DType::bf16})
      for (int32_t group : {1, 3}) {
        CAPTURE(D);
        CAPTURE(to_string(dt));
        CAPTURE(group);
        // Three rows' sessions; some slots invisible, so the runs are ragged;
        // 37 and 70 queries per row leave partial query tiles.
        check_ring(D, dt, 2, group, D % 2 ? 37 : 70, {0, 130, 260}, {130, 260, 397}, 397, 0.7,
                   static_cast<uint64_t>(D) * 13 + static_cast<uint64_t>(group));
      }
  // One row with nothing visible outputs zeros (the reference's convention).
  check_ring(64, DType::bf16, 2, 2, 9, {0}, {40}, 40, 0.0, 3);
}

TEST_CASE("ring attention: a Waypoint-like frame (512 queries, D 64, group 2, 3 frames visible) in bf16") {
  check_ring(64, DType::bf16, 2, 2, 512, {0}, {4 * 512}, 4 * 512, 0.8, 77);
}
