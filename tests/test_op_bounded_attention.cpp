// bounded_attention on the backend under test (on_backend.h) against the
// reference: odd and real head dims, every KV dtype, both masks, query
// groups, rotary positions on read, padding rows, reads from the source and
// the slot, long decode rows, a prefill chunk; and a batch against its rows
// run one by one, bit for bit.
//
// Tolerance: f32 products, sums and exp2 against double throughout; outputs
// are averages of O(1) values, so the error is a few f32 ulps of O(1) per
// term and, summed over thousands of terms, stays near 1e-6; 1e-4 absolute
// leaves room and still catches any wrong entry, mask or scale (those move
// outputs by O(0.01) and more).
#include <doctest/doctest.h>

#include <cmath>
#include <cstring>
#include <vector>

#include "kernels/bounded_kv.h"
#include "kernels/rope.h"
#include "on_backend.h"

using namespace mstar;
using namespace mstar::kernels;

namespace {

// Bounded attention: a step's rows, built once on the host, run on a backend.

struct RowSpec {
  bool padding = false;
  int32_t source_len = 0;  // 0: no source
  std::vector<KVRead> reads;
  int32_t q_len = 1, span = 1;
};

struct Scene {
  int32_t H = 2, group = 2, D = 64;
  DType dt = DType::f32;
  StepMask mask = StepMask::full;
  bool rope = false;
  int32_t slot_tokens = 64;
  std::vector<RowSpec> rows;
  int64_t q_pad = 0, kv_pad = 0, out_pad = 0;  // extra elements per token (odd strides)
  uint64_t seed = 1;
};

// The scene's data, the same for every backend.
struct SceneData {
  std::vector<unsigned char> pool, sources;  // slots [rows][H][slot_tokens][2D], sources back to back
  std::vector<int64_t> source_off;           // bytes into `sources` per row
  std::vector<float> q, k, v, out_init, inv_freq;
  std::vector<BoundedRowTable> table;
  std::vector<int32_t> q_indptr{0}, kv_indptr{0};
  int64_t q_ts = 0, kv_ts = 0, out_ts = 0;
};

SceneData build(const Scene& s) {
  test::Rng rng(s.seed);
  SceneData d;
  const int64_t rows = static_cast<int64_t>(s.rows.size()), Hq = s.H * s.group;
  d.pool = test::random_values(rng, s.dt, rows * s.H * s.slot_tokens * 2 * s.D);
  for (const RowSpec& r : s.rows) {
    d.source_off.push_back(static_cast<int64_t>(d.sources.size()));
    const auto b = test::random_values(rng, s.dt, static_cast<int64_t>(s.H) * r.source_len * 2 * s.D);
    d.sources.insert(d.sources.end(), b.begin(), b.end());
  }
  for (int64_t r = 0; r < rows; ++r) {
    const RowSpec& rs = s.rows[static_cast<size_t>(r)];
    BoundedRowTable t;
    t.slot = rs.padding ? kPaddingRow : static_cast<int32_t>(r);
    REQUIRE(rs.reads.size() <= 5);
    for (size_t i = 0; i < rs.reads.size(); ++i) t.reads[i] = rs.reads[i];
    d.table.push_back(t);
    d.q_indptr.push_back(d.q_indptr.back() + rs.q_len);
    d.kv_indptr.push_back(d.kv_indptr.back() + rs.span);
  }
  d.q_ts = Hq * s.D + s.q_pad;
  d.kv_ts = s.H * s.D + s.kv_pad;
  d.out_ts = Hq * s.D + s.out_pad;
  d.q = rng.normals(static_cast<size_t>(d.q_indptr.back() * d.q_ts));
  d.k = rng.normals(static_cast<size_t>(d.kv_indptr.back() * d.kv_ts));
  d.v = rng.normals(static_cast<size_t>(d.kv_indptr.back() * d.kv_ts));
  d.out_init.assign(static_cast<size_t>(d.q_indptr.back() * d.out_ts), -7.0f);  // gaps must stay -7
  if (s.rope) d.inv_freq = rope_inv_freq(s.D, 10000.0);
  return d;
}

BoundedAttentionParams params_of(const Scene& s, const SceneData& d) {
  BoundedAttentionParams p;
  p.rows = static_cast<int32_t>(s.rows.size());
  p.num_kv_heads = s.H;
  p.num_q_heads = s.H * s.group;
  p.head_dim = s.D;
  p.kv_dtype = s.dt;
  p.mask = s.mask;
  p.scale = 1.0f / std::sqrt(static_cast<float>(s.D));
  p.q_token_stride = d.q_ts;
  p.q_head_stride = s.D;
  p.kv_token_stride = d.kv_ts;
  p.kv_head_stride = s.D;
  p.out_token_stride = d.out_ts;
  p.out_head_stride = s.D;
  return p;
}

std::vector<BoundedRowAddress> addresses(const Scene& s, const SceneData& d, unsigned char* pool,
                                         unsigned char* sources) {
  std::vector<BoundedRowAddress> a;
  const int64_t es = static_cast<int64_t>(row_bytes(s.dt, 1));
  for (size_t r = 0; r < s.rows.size(); ++r) {
    BoundedRowAddress x;
    x.slot = pool + static_cast<int64_t>(r) * s.H * s.slot_tokens * 2 * s.D * es;
    x.slot_head_stride = static_cast<int64_t>(s.slot_tokens) * 2 * s.D;
    if (s.rows[r].source_len > 0) {
      x.source = sources + d.source_off[r];
      x.source_head_stride = static_cast<int64_t>(s.rows[r].source_len) * 2 * s.D;
    }
    a.push_back(x);
  }
  return a;
}

struct Result {
  std::vector<float> out;
  std::vector<unsigned char> pool;
};

// The reference on host copies.
Result run_reference(const Scene& s, const SceneData& d) {
  Result res{d.out_init, d.pool};
  std::vector<unsigned char> sources = d.sources;
  const auto a = addresses(s, d, res.pool.data(), sources.data());
  BoundedAttentionParams p = params_of(s, d);
  p.table = d.table.data();
  p.address = a.data();
  p.q_indptr = d.q_indptr.data();
  p.kv_indptr = d.kv_indptr.data();
  p.q = d.q.data();
  p.k = d.k.data();
  p.v = d.v.data();
  p.out = res.out.data();
  p.rope_inv_freq = s.rope ? d.inv_freq.data() : nullptr;
  bounded_attention(Backend::reference, p);
  return res;
}

// The scene in the backend's memory, for one or more runs.
struct BackendScene {
  DeviceBuffer pool, sources, q, k, v, out, table, address, q_indptr, kv_indptr, inv_freq;
  BoundedAttentionParams p;
};

BackendScene to_backend(const Scene& s, const SceneData& d) {
  BackendScene x;
  x.pool = test::upload(d.pool);
  x.sources = test::upload(d.sources);
  x.q = test::upload(d.q);
  x.k = test::upload(d.k);
  x.v = test::upload(d.v);
  x.out = test::upload(d.out_init);
  x.table = test::upload(d.table);
  x.address = test::upload(
      addresses(s, d, static_cast<unsigned char*>(x.pool.data()), static_cast<unsigned char*>(x.sources.data())));
  x.q_indptr = test::upload(d.q_indptr);
  x.kv_indptr = test::upload(d.kv_indptr);
  x.inv_freq = test::upload(d.inv_freq);
  x.p = params_of(s, d);
  x.p.table = static_cast<const BoundedRowTable*>(x.table.data());
  x.p.address = static_cast<const BoundedRowAddress*>(x.address.data());
  x.p.q_indptr = static_cast<const int32_t*>(x.q_indptr.data());
  x.p.kv_indptr = static_cast<const int32_t*>(x.kv_indptr.data());
  x.p.q = static_cast<const float*>(x.q.data());
  x.p.k = static_cast<const float*>(x.k.data());
  x.p.v = static_cast<const float*>(x.v.data());
  x.p.out = static_cast<float*>(x.out.data());
  x.p.rope_inv_freq = s.rope ? static_cast<const float*>(x.inv_freq.data()) : nullptr;
  return x;
}

Result run_on_backend(const Scene& s, const SceneData& d) {
  BackendScene x = to_backend(s, d);
  bounded_attention(test::backend_under_test(), x.p);
  return {test::download<float>(x.out, d.out_init.size()), test::download<unsigned char>(x.pool, d.pool.size())};
}

void check_scene(const Scene& s) {
  const SceneData d = build(s);
  const Result want = run_reference(s, d);
  const Result got = run_on_backend(s, d);
  CHECK(test::max_abs_diff(got.out, want.out) <= 1e-4f);
  CHECK(got.pool == d.pool);  // attention only reads
}

// A step of five rows: a mix of source and slot reads with decode-sized
// queries, a padding row, a long decode row (split across blocks), a row
// that sees nothing (full) or only its own entry (causal), and a prefill
// chunk (several query chunks).
Scene mixed_scene(int32_t D, DType dt, StepMask mask, int32_t group, bool rope, uint64_t seed) {
  Scene s;
  s.H = 2;
  s.group = group;
  s.D = D;
  s.dt = dt;
  s.mask = mask;
  s.rope = rope;
  s.slot_tokens = 320;
  s.q_pad = 3;
  s.kv_pad = 4;
  s.out_pad = 5;
  s.seed = seed;
  const bool causal = mask == StepMask::causal;
  RowSpec r0;
  r0.source_len = 50;
  r0.reads = {{1, 0, 20}, {0, 5, 60}, {0, 100, 7}};
  r0.q_len = causal ? 5 : 2;
  r0.span = causal ? 5 : 3;
  RowSpec r1;
  r1.padding = true;
  r1.q_len = 2;
  r1.span = 2;
  RowSpec r2;
  r2.reads = {{0, 0, 4}, {0, 10, 290}};
  r2.q_len = 1;
  r2.span = 1;
  RowSpec r3;
  r3.q_len = causal ? 1 : 2;
  r3.span = causal ? 1 : 0;
  RowSpec r4;
  r4.source_len = 45;
  r4.reads = {{1, 3, 40}, {0, 0, 0}, {0, 200, 33}};
  r4.q_len = 12;
  r4.span = causal ? 12 : 15;
  s.rows = {r0, r1, r2, r3, r4};
  return s;
}

// ---------------------------------------------------------------------------

}  // namespace

TEST_CASE("bounded attention: odd and real head dims, every kv dtype, both masks, group sizes, against the reference") {
  for (int32_t D : {17, 54, 97, 64, 128})
    for (DType dt : {DType::f32, DType::f16, DType::bf16})
      for (StepMask mask : {StepMask::full, StepMask::causal})
        for (int32_t group : {1, 3, 8}) {
          CAPTURE(D);
          CAPTURE(to_string(dt));
          CAPTURE(mask == StepMask::causal);
          CAPTURE(group);
          check_scene(mixed_scene(D, dt, mask, group, false, static_cast<uint64_t>(D * 31 + group)));
        }
}

TEST_CASE("bounded attention: rotary positions on read, against the reference") {
  for (int32_t D : {54, 64, 128})  // 54: an odd half (27 pairs)
    for (DType dt : {DType::f32, DType::f16, DType::bf16})
      for (StepMask mask : {StepMask::full, StepMask::causal}) {
        CAPTURE(D);
        CAPTURE(to_string(dt));
        CAPTURE(mask == StepMask::causal);
        check_scene(mixed_scene(D, dt, mask, 4, true, static_cast<uint64_t>(D) + 7));
      }
}

TEST_CASE("bounded attention: long decode rows split across blocks, and a prefill chunk of 64 tokens") {
  // Each dtype once, each group size once: the reference's double loops over
  // 9,005 entries are what this test spends its time on.
  for (auto [dt, group] : {std::pair{DType::bf16, 16}, std::pair{DType::f32, 4}, std::pair{DType::bf16, 8}}) {
    CAPTURE(to_string(dt));
    CAPTURE(group);
    Scene s;
    s.H = 2;
    s.group = group;
    s.D = 128;
    s.dt = dt;
    s.mask = StepMask::causal;
    s.slot_tokens = 9100;
    s.seed = static_cast<uint64_t>(group);
    RowSpec a;  // 9005 visible: the split count's cap (32), splits of 320
    a.reads = {{0, 0, 4}, {0, 10, 9000}};
    RowSpec b;  // 5001 visible from the source and the slot: 20 splits
    b.source_len = 1000;
    b.reads = {{1, 0, 1000}, {0, 0, 4000}};
    RowSpec c;  // a prefill chunk over a retained window
    c.reads = {{0, 0, 4}, {0, 100, 700}};
    c.q_len = 64;
    c.span = 64;
    s.rows = {a, b, c};
    check_scene(s);
  }
}

TEST_CASE("bounded attention: 1, 3 and 17 rows, and each batch equals its rows run one by one, bit for bit") {
  for (int32_t rows : {1, 3, 17}) {
    CAPTURE(rows);
    Scene s;
    s.H = 2;
    s.group = 4;
    s.D = 64;
    s.dt = DType::bf16;
    s.mask = StepMask::causal;
    s.slot_tokens = 700;
    s.kv_pad = 1;  // odd token strides: some step entries take the unaligned path
    s.seed = static_cast<uint64_t>(rows) * 5;
    test::Rng rng(static_cast<uint64_t>(rows));
    for (int32_t r = 0; r < rows; ++r) {
      RowSpec x;
      x.padding = r % 7 == 5;
      x.source_len = r % 2 ? 64 : 0;
      const auto w = static_cast<int32_t>(rng.uniform(0, 600));
      x.reads = {{0, 0, static_cast<int32_t>(rng.uniform(0, 4))}, {0, 50, w}};
      if (x.source_len) x.reads.insert(x.reads.begin(), KVRead{1, 0, 64});
      x.q_len = r % 4 == 3 ? 9 : 1;
      x.span = x.q_len + static_cast<int32_t>(rng.uniform(0, 2));
      s.rows.push_back(x);
    }
    const SceneData d = build(s);
    const Result want = run_reference(s, d);
    BackendScene x = to_backend(s, d);
    bounded_attention(test::backend_under_test(), x.p);
    const std::vector<float> batched = test::download<float>(x.out, d.out_init.size());
    CHECK(test::max_abs_diff(batched, want.out) <= 1e-4f);
    // Each row alone: its table, address and indptrs, with q, k, v and out
    // offset to its first token (the same addresses as in the batch).
    DeviceBuffer alone_out = test::upload(d.out_init);
    for (int32_t r = 0; r < rows; ++r) {
      const std::vector<int32_t> qi{0, d.q_indptr[static_cast<size_t>(r) + 1] - d.q_indptr[static_cast<size_t>(r)]};
      const std::vector<int32_t> ki{0, d.kv_indptr[static_cast<size_t>(r) + 1] - d.kv_indptr[static_cast<size_t>(r)]};
      const DeviceBuffer qi_dev = test::upload(qi), ki_dev = test::upload(ki);
      BoundedAttentionParams p = x.p;
      p.rows = 1;
      p.table += r;
      p.address += r;
      p.q_indptr = static_cast<const int32_t*>(qi_dev.data());
      p.kv_indptr = static_cast<const int32_t*>(ki_dev.data());
      p.q += d.q_indptr[static_cast<size_t>(r)] * d.q_ts;
      p.k += d.kv_indptr[static_cast<size_t>(r)] * d.kv_ts;
      p.v += d.kv_indptr[static_cast<size_t>(r)] * d.kv_ts;
      p.out = static_cast<float*>(alone_out.data()) + d.q_indptr[static_cast<size_t>(r)] * d.out_ts;
      bounded_attention(test::backend_under_test(), p);
      synchronize(test::backend_under_test());  // the indptrs above are freed at the end of the iteration
    }
    const std::vector<float> one_by_one = test::download<float>(alone_out, d.out_init.size());
    REQUIRE(one_by_one.size() == batched.size());
    CHECK(std::memcmp(one_by_one.data(), batched.data(), batched.size() * sizeof(float)) == 0);
  }
}
