// The CUDA backend against the reference (attention, matmul) and the host
// implementations (store, commit, upsert, the elementwise ops), on odd sizes
// and the real ones, every KV dtype, both masks, rotary positions on read,
// padding rows, reads from the source and the slot; a batch against its rows
// run one by one (bit for bit); and the shipped demos end to end against the
// cpu backend. A separate executable (mstar_cuda_tests) with its own main: on
// a machine without a usable GPU it says why and exits 77, which ctest counts
// as skipped.
//
// Tolerances, and why:
//   attention (bounded, ring): f32 products, sums and exp2 against double
//     throughout; outputs are averages of O(1) values, so the error is a few
//     f32 ulps of O(1) per term and, summed over thousands of terms, stays
//     near 1e-6; 1e-4 absolute leaves room and still catches any wrong entry,
//     mask or scale (those move outputs by O(0.01) and more).
//   matmul: the error is bounded by u * sum_i |x_i w_i| (u the unit roundoff
//     of what is rounded) plus f32 accumulation (about sqrt(in) * 2^-24 of
//     the same sum for random signs): f32 weights (the hand-written kernel
//     and cublasSgemm) and 16-bit weights through the hand-written kernel
//     (activations stay f32) 2e-5 of sum |x w|; cuBLAS with activations
//     rounded to the weights' dtype: f16 (11 significant bits, u = 2^-11)
//     1e-3, bf16 (8 bits, u = 2^-8) 1e-2 of sum |x w|.
//   rmsnorm: the sum of squares in f32 on the device (double on the host):
//     1e-5 relative.
//   silu_mul, rope: the device's expf / sincos against the host's, each a
//     few ulps: 1e-6 relative (silu), 1e-6 absolute on O(1) values (rope).
//   store, commit, upsert, embed, gather_rows, add_rows, lerp: bit for bit.
#define DOCTEST_CONFIG_IMPLEMENT
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "kernels/backend.h"
#include "kernels/bounded_kv.h"
#include "core/allocator.h"
#include "core/dtype.h"
#include "deployments.h"
#include "engine/engine.h"
#include "engine/program.h"
#include "kernels/ops.h"
#include "kernels/ring_kv.h"
#include "kernels/rope.h"
#include "support.h"

using namespace mstar;
using namespace mstar::kernels;

namespace {

constexpr Backend kDev = Backend::cuda;

Allocator& dev() { return allocator_for(kDev); }

// A host array copied into device memory (at least one byte, so empty arrays have an address).
template <class T>
DeviceBuffer upload(const std::vector<T>& v) {
  DeviceBuffer b(dev(), std::max<std::size_t>(1, v.size() * sizeof(T)));
  if (!v.empty()) dev().copy_from_host(b.data(), v.data(), v.size() * sizeof(T));
  return b;
}

template <class T>
std::vector<T> download(const DeviceBuffer& b, std::size_t n) {
  std::vector<T> v(n);
  synchronize(kDev);
  if (n) dev().copy_to_host(v.data(), b.data(), n * sizeof(T));
  return v;
}

// Random values stored in dtype dt: bytes.
std::vector<unsigned char> random_kv(test::Rng& rng, DType dt, int64_t count) {
  std::vector<unsigned char> b(row_bytes(dt, count));
  for (int64_t i = 0; i < count; ++i) store_from_f32(b.data(), dt, static_cast<std::size_t>(i), rng.normal());
  return b;
}

// ---------------------------------------------------------------------------
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
  d.pool = random_kv(rng, s.dt, rows * s.H * s.slot_tokens * 2 * s.D);
  for (const RowSpec& r : s.rows) {
    d.source_off.push_back(static_cast<int64_t>(d.sources.size()));
    const auto b = random_kv(rng, s.dt, static_cast<int64_t>(s.H) * r.source_len * 2 * s.D);
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

std::vector<BoundedRowAddress> addresses(const Scene& s, const SceneData& d, unsigned char* pool, unsigned char* sources) {
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

// The scene in device memory, for one or more runs.
struct DeviceScene {
  DeviceBuffer pool, sources, q, k, v, out, table, address, q_indptr, kv_indptr, inv_freq;
  BoundedAttentionParams p;
};

DeviceScene to_device(const Scene& s, const SceneData& d) {
  DeviceScene x;
  x.pool = upload(d.pool);
  x.sources = upload(d.sources);
  x.q = upload(d.q);
  x.k = upload(d.k);
  x.v = upload(d.v);
  x.out = upload(d.out_init);
  x.table = upload(d.table);
  x.address = upload(addresses(s, d, static_cast<unsigned char*>(x.pool.data()), static_cast<unsigned char*>(x.sources.data())));
  x.q_indptr = upload(d.q_indptr);
  x.kv_indptr = upload(d.kv_indptr);
  x.inv_freq = upload(d.inv_freq);
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

Result run_device(const Scene& s, const SceneData& d) {
  DeviceScene x = to_device(s, d);
  bounded_attention(kDev, x.p);
  return {download<float>(x.out, d.out_init.size()), download<unsigned char>(x.pool, d.pool.size())};
}

void check_scene(const Scene& s) {
  const SceneData d = build(s);
  const Result want = run_reference(s, d);
  const Result got = run_device(s, d);
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

TEST_CASE("cuda allocator: zero-filled allocations, copies both ways, overlapping copies as memmove") {
  Allocator& a = dev();
  CHECK(a.device() == Device::cuda);
  DeviceBuffer b(a, 1000);
  std::vector<unsigned char> host(1000, 0xab);
  a.copy_to_host(host.data(), b.data(), host.size());
  CHECK(std::all_of(host.begin(), host.end(), [](unsigned char c) { return c == 0; }));
  std::vector<int32_t> v(250);
  for (int i = 0; i < 250; ++i) v[static_cast<size_t>(i)] = i;
  a.copy_from_host(b.data(), v.data(), 1000);
  a.copy(static_cast<int32_t*>(b.data()) + 10, b.data(), 100 * sizeof(int32_t));  // overlapping, forward
  std::vector<int32_t> back(250);
  a.copy_to_host(back.data(), b.data(), 1000);
  std::vector<int32_t> want = v;
  std::memmove(want.data() + 10, want.data(), 100 * sizeof(int32_t));
  CHECK(back == want);
  a.fill_zero(static_cast<int32_t*>(b.data()) + 3, 5 * sizeof(int32_t));
  a.copy_to_host(back.data(), b.data(), 1000);
  std::fill(want.begin() + 3, want.begin() + 8, 0);
  CHECK(back == want);
}

TEST_CASE("cuda bounded attention: odd and real head dims, every kv dtype, both masks, group sizes, against the reference") {
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

TEST_CASE("cuda bounded attention: rotary positions on read, against the reference") {
  for (int32_t D : {54, 64, 128})  // 54: an odd half (27 pairs)
    for (DType dt : {DType::f32, DType::f16, DType::bf16})
      for (StepMask mask : {StepMask::full, StepMask::causal}) {
        CAPTURE(D);
        CAPTURE(to_string(dt));
        CAPTURE(mask == StepMask::causal);
        check_scene(mixed_scene(D, dt, mask, 4, true, static_cast<uint64_t>(D) + 7));
      }
}

TEST_CASE("cuda bounded attention: long decode rows split across blocks, and a prefill chunk of 64 tokens") {
  for (DType dt : {DType::bf16, DType::f32})
    for (int32_t group : {4, 8, 16}) {
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

TEST_CASE("cuda bounded attention: 1, 3 and 17 rows, and each batch equals its rows run one by one, bit for bit") {
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
    DeviceScene x = to_device(s, d);
    bounded_attention(kDev, x.p);
    const std::vector<float> batched = download<float>(x.out, d.out_init.size());
    CHECK(test::max_abs_diff(batched, want.out) <= 1e-4f);
    // Each row alone: its table, address and indptrs, with q, k, v and out
    // offset to its first token (the same addresses as in the batch).
    DeviceBuffer alone_out = upload(d.out_init);
    for (int32_t r = 0; r < rows; ++r) {
      const std::vector<int32_t> qi{0, d.q_indptr[static_cast<size_t>(r) + 1] - d.q_indptr[static_cast<size_t>(r)]};
      const std::vector<int32_t> ki{0, d.kv_indptr[static_cast<size_t>(r) + 1] - d.kv_indptr[static_cast<size_t>(r)]};
      const DeviceBuffer qi_dev = upload(qi), ki_dev = upload(ki);
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
      bounded_attention(kDev, p);
      synchronize(kDev);  // the indptrs above are freed at the end of the iteration
    }
    const std::vector<float> one_by_one = download<float>(alone_out, d.out_init.size());
    REQUIRE(one_by_one.size() == batched.size());
    CHECK(std::memcmp(one_by_one.data(), batched.data(), batched.size() * sizeof(float)) == 0);
  }
}

// ---------------------------------------------------------------------------
// Store and commit against the host copies, byte for byte.

TEST_CASE("cuda bounded store and commit: byte for byte as the host, every dtype, odd head dims, padding rows") {
  for (int32_t D : {17, 54, 97, 64, 128})
    for (DType dt : {DType::f32, DType::f16, DType::bf16}) {
      CAPTURE(D);
      CAPTURE(to_string(dt));
      test::Rng rng(static_cast<uint64_t>(D) * 3 + static_cast<uint64_t>(dt));
      const int32_t H = 3, retained = 40, scratch = 16, tokens = retained + scratch, rows = 4;
      std::vector<unsigned char> pool = random_kv(rng, dt, static_cast<int64_t>(rows) * H * tokens * 2 * D);
      std::vector<BoundedRowTable> table(rows);
      std::vector<int32_t> kv_indptr{0};
      for (int32_t r = 0; r < rows; ++r) {
        const int32_t span = 6 + r;
        BoundedRowTable& t = table[static_cast<size_t>(r)];
        t.slot = r == 2 ? kPaddingRow : r;
        t.writes[0] = {0, 1, 2, 3};                  // step entries 0..2 to offsets 2..4
        t.writes[1] = {span - 1, -1, 20 + r, 4};     // the last four, last first (reverse order)
        if (r == 3) t.writes[2] = {3, 1, 30, 2};
        kv_indptr.push_back(kv_indptr.back() + span);
      }
      const int64_t kv_ts = H * D + 2;
      const std::vector<float> k = rng.normals(static_cast<size_t>(kv_indptr.back() * kv_ts));
      const std::vector<float> v = rng.normals(static_cast<size_t>(kv_indptr.back() * kv_ts));
      const int64_t es = static_cast<int64_t>(row_bytes(dt, 1));
      auto address_of = [&](unsigned char* base) {
        std::vector<BoundedRowAddress> a(rows);
        for (int32_t r = 0; r < rows; ++r) {
          a[static_cast<size_t>(r)].slot = base + static_cast<int64_t>(r) * H * tokens * 2 * D * es;
          a[static_cast<size_t>(r)].slot_head_stride = static_cast<int64_t>(tokens) * 2 * D;
        }
        return a;
      };
      BoundedStoreParams sp;
      sp.rows = rows;
      sp.num_kv_heads = H;
      sp.head_dim = D;
      sp.kv_dtype = dt;
      sp.scratch_start = retained;
      sp.kv_token_stride = kv_ts;
      sp.kv_head_stride = D;
      BoundedCommitParams cp;
      cp.rows = rows;
      cp.num_kv_heads = H;
      cp.head_dim = D;
      cp.kv_dtype = dt;
      cp.scratch_start = retained;

      // Host.
      std::vector<unsigned char> host = pool;
      const auto ha = address_of(host.data());
      BoundedStoreParams hs = sp;
      hs.table = table.data();
      hs.address = ha.data();
      hs.kv_indptr = kv_indptr.data();
      hs.k = k.data();
      hs.v = v.data();
      bounded_store(Backend::cpu, hs);
      const std::vector<unsigned char> host_stored = host;
      BoundedCommitParams hc = cp;
      hc.table = table.data();
      hc.address = ha.data();
      bounded_commit(Backend::cpu, hc);

      // Device.
      DeviceBuffer dpool = upload(pool), dtable = upload(table), dindptr = upload(kv_indptr), dk = upload(k), dv = upload(v);
      DeviceBuffer daddr = upload(address_of(static_cast<unsigned char*>(dpool.data())));
      BoundedStoreParams ds = sp;
      ds.table = static_cast<const BoundedRowTable*>(dtable.data());
      ds.address = static_cast<const BoundedRowAddress*>(daddr.data());
      ds.kv_indptr = static_cast<const int32_t*>(dindptr.data());
      ds.k = static_cast<const float*>(dk.data());
      ds.v = static_cast<const float*>(dv.data());
      bounded_store(kDev, ds);
      CHECK(download<unsigned char>(dpool, pool.size()) == host_stored);
      BoundedCommitParams dc = cp;
      dc.table = ds.table;
      dc.address = ds.address;
      bounded_commit(kDev, dc);
      CHECK(download<unsigned char>(dpool, pool.size()) == host);
      CHECK(host != host_stored);  // the commit moved something
    }
}

TEST_CASE("cuda bounded store: a source prefill (scratch_start 0, one write range) as the host writes it") {
  for (DType dt : {DType::f32, DType::f16, DType::bf16}) {
    test::Rng rng(9);
    const int32_t H = 2, D = 64, len = 48;
    const std::vector<float> k = rng.normals(static_cast<size_t>(len * H * D)), v = rng.normals(static_cast<size_t>(len * H * D));
    std::vector<BoundedRowTable> table(1);
    table[0].slot = 0;
    table[0].writes[0] = {0, 1, 0, len};
    const std::vector<int32_t> indptr{0, len};
    std::vector<unsigned char> host(row_bytes(dt, H * len * 2 * D));
    std::vector<BoundedRowAddress> ha{{host.data(), nullptr, static_cast<int64_t>(len) * 2 * D, 0}};
    BoundedStoreParams p;
    p.rows = 1;
    p.num_kv_heads = H;
    p.head_dim = D;
    p.kv_dtype = dt;
    p.kv_token_stride = H * D;
    p.kv_head_stride = D;
    BoundedStoreParams hp = p;
    hp.table = table.data();
    hp.address = ha.data();
    hp.kv_indptr = indptr.data();
    hp.k = k.data();
    hp.v = v.data();
    bounded_store(Backend::cpu, hp);
    DeviceBuffer src(dev(), host.size()), dt_table = upload(table), dindptr = upload(indptr), dk = upload(k), dv = upload(v);
    DeviceBuffer daddr = upload(std::vector<BoundedRowAddress>{{src.data(), nullptr, static_cast<int64_t>(len) * 2 * D, 0}});
    p.table = static_cast<const BoundedRowTable*>(dt_table.data());
    p.address = static_cast<const BoundedRowAddress*>(daddr.data());
    p.kv_indptr = static_cast<const int32_t*>(dindptr.data());
    p.k = static_cast<const float*>(dk.data());
    p.v = static_cast<const float*>(dv.data());
    bounded_store(kDev, p);
    CHECK(download<unsigned char>(src, host.size()) == host);
  }
}

// ---------------------------------------------------------------------------
// Ring upsert and attention.

TEST_CASE("cuda ring upsert: byte for byte as the host, with and without the ring slot") {
  for (int32_t D : {17, 64, 97})
    for (DType dt : {DType::f32, DType::f16, DType::bf16})
      for (bool commit : {false, true}) {
        CAPTURE(D);
        CAPTURE(to_string(dt));
        CAPTURE(commit);
        test::Rng rng(static_cast<uint64_t>(D) + 11);
        const int32_t H = 2, T = 5, rows = 3;
        const int64_t total = 3 * 4 * T;  // three sessions of four frames
        std::vector<unsigned char> kv = random_kv(rng, dt, 2 * H * total * D);
        const int64_t ts = H * D + 3;
        const std::vector<float> k = rng.normals(static_cast<size_t>(rows * T * ts)), v = rng.normals(static_cast<size_t>(rows * T * ts));
        const std::vector<int64_t> scratch{3 * T, 7 * T, 11 * T}, ring{0, -1, 9 * T};
        RingUpsertParams p;
        p.rows = rows;
        p.num_kv_heads = H;
        p.head_dim = D;
        p.tokens = T;
        p.kv_dtype = dt;
        p.total_slots = total;
        p.token_stride = ts;
        p.head_stride = D;
        std::vector<unsigned char> host = kv;
        RingUpsertParams hp = p;
        hp.kv = host.data();
        hp.k = k.data();
        hp.v = v.data();
        hp.scratch_start = scratch.data();
        hp.ring_start = commit ? ring.data() : nullptr;
        ring_upsert(Backend::cpu, hp);
        DeviceBuffer dkv = upload(kv), dk = upload(k), dv = upload(v), ds = upload(scratch), dr = upload(ring);
        p.kv = dkv.data();
        p.k = static_cast<const float*>(dk.data());
        p.v = static_cast<const float*>(dv.data());
        p.scratch_start = static_cast<const int64_t*>(ds.data());
        p.ring_start = commit ? static_cast<const int64_t*>(dr.data()) : nullptr;
        ring_upsert(kDev, p);
        CHECK(download<unsigned char>(dkv, kv.size()) == host);
      }
}

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
  const std::vector<unsigned char> kv = random_kv(rng, dt, 2 * H * slots * D);
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
  DeviceBuffer dkv = upload(kv), dind = upload(indptr), drg = upload(ranges), dq = upload(q), dout = upload(std::vector<float>(want.size(), -7.0f));
  p.kv = dkv.data();
  p.range_indptr = static_cast<const int32_t*>(dind.data());
  p.ranges = static_cast<const RingRange*>(drg.data());
  p.q = static_cast<const float*>(dq.data());
  p.out = static_cast<float*>(dout.data());
  ring_attention(kDev, p);
  CHECK(test::max_abs_diff(download<float>(dout, want.size()), want) <= 1e-4f);
}

TEST_CASE("cuda ring attention: odd and real head dims, every dtype, query groups, against the reference") {
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

TEST_CASE("cuda ring attention: a Waypoint-like frame (512 queries, D 64, group 2, 3 frames visible) in bf16") {
  check_ring(64, DType::bf16, 2, 2, 512, {0}, {4 * 512}, 4 * 512, 0.8, 77);
}

// ---------------------------------------------------------------------------
// The trunk's ops.

// Largest |got - want| / (sum_i |x_i w_i| + |bias| + |y_before|) over the outputs.
double matmul_error(const MatmulParams& p, const std::vector<float>& x, const std::vector<unsigned char>& w,
                    const std::vector<float>& bias, const std::vector<float>& y_before, const std::vector<float>& got,
                    const std::vector<float>& want) {
  double worst = 0;
  for (int64_t r = 0; r < p.rows; ++r)
    for (int64_t o = 0; o < p.out; ++o) {
      double mag = 0;
      for (int64_t i = 0; i < p.in; ++i)
        mag += std::fabs(static_cast<double>(x[static_cast<size_t>(r * p.x_stride + i)]) *
                         load_as_f32(w.data(), p.w_dtype, static_cast<size_t>(o * p.in + i)));
      if (!bias.empty()) mag += std::fabs(bias[static_cast<size_t>(o)]);
      const auto at = static_cast<size_t>(r * p.y_stride + o);
      if (p.accumulate) mag += std::fabs(y_before[at]);
      worst = std::max(worst, std::fabs(static_cast<double>(got[at]) - want[at]) / (mag + 1e-30));
    }
  return worst;
}

TEST_CASE("cuda matmul: f32, f16 and bf16 weights, 1 to 97 rows (hand-written and cuBLAS paths), bias and accumulate") {
  const std::pair<int64_t, int64_t> shapes[] = {{97, 54}, {17, 33}, {256, 128}, {4096, 64}};  // (in, out); the last splits K
  for (DType wdt : {DType::f32, DType::f16, DType::bf16})
    for (int64_t rows : {1, 5, 17, 97})
      for (auto [in, out] : shapes)
        for (int variant = 0; variant < 2; ++variant) {
          CAPTURE(to_string(wdt));
          CAPTURE(rows);
          CAPTURE(in);
          CAPTURE(out);
          CAPTURE(variant);
          test::Rng rng(static_cast<uint64_t>(rows * 1000 + in + out + variant));
          MatmulParams p;
          p.rows = rows;
          p.in = in;
          p.out = out;
          p.x_stride = in + 3;
          p.y_stride = out + 5;
          p.w_dtype = wdt;
          p.accumulate = variant == 1;
          const std::vector<float> x = rng.normals(static_cast<size_t>(rows * p.x_stride));
          const std::vector<unsigned char> w = random_kv(rng, wdt, out * in);
          const std::vector<float> bias = variant == 1 ? rng.normals(static_cast<size_t>(out)) : std::vector<float>{};
          const std::vector<float> y0 = rng.normals(static_cast<size_t>(rows * p.y_stride));
          std::vector<float> want = y0;
          MatmulParams hp = p;
          hp.x = x.data();
          hp.w = w.data();
          hp.bias = bias.empty() ? nullptr : bias.data();
          hp.y = want.data();
          matmul(Backend::reference, hp);
          DeviceBuffer dx = upload(x), dw = upload(w), db = upload(bias), dy = upload(y0);
          p.x = static_cast<const float*>(dx.data());
          p.w = dw.data();
          p.bias = bias.empty() ? nullptr : static_cast<const float*>(db.data());
          p.y = static_cast<float*>(dy.data());
          matmul(kDev, p);
          const std::vector<float> got = download<float>(dy, y0.size());
          const bool cublas_16bit = rows > 16 && wdt != DType::f32;
          const double tol = !cublas_16bit ? 2e-5 : wdt == DType::f16 ? 1e-3 : 1e-2;
          CHECK(matmul_error(p, x, w, bias, y0, got, want) <= tol);
          // The gaps between rows (y_stride > out) are untouched.
          for (int64_t r = 0; r < rows; ++r)
            for (int64_t o = out; o < p.y_stride; ++o)
              CHECK(got[static_cast<size_t>(r * p.y_stride + o)] == y0[static_cast<size_t>(r * p.y_stride + o)]);
        }
}

TEST_CASE("cuda rmsnorm: rows 1, 3, 17 at odd and real widths, in place too") {
  for (int64_t rows : {1, 3, 17})
    for (int64_t width : {17, 54, 97, 64, 128, 4096}) {
      CAPTURE(rows);
      CAPTURE(width);
      test::Rng rng(static_cast<uint64_t>(rows * width));
      const std::vector<float> x = rng.normals(static_cast<size_t>(rows * width)), w = rng.normals(static_cast<size_t>(width));
      std::vector<float> want(x.size());
      rmsnorm_reference({rows, width, x.data(), w.data(), 1e-6, want.data(), 1});
      DeviceBuffer dx = upload(x), dw = upload(w), dout(dev(), x.size() * sizeof(float));
      for (bool in_place : {false, true}) {
        if (in_place) dev().copy_from_host(dx.data(), x.data(), x.size() * sizeof(float));
        float* out = in_place ? static_cast<float*>(dx.data()) : static_cast<float*>(dout.data());
        rmsnorm(kDev, {rows, width, static_cast<const float*>(dx.data()), static_cast<const float*>(dw.data()), 1e-6, out, 1});
        const std::vector<float> got = download<float>(in_place ? dx : dout, x.size());
        for (size_t i = 0; i < got.size(); ++i) CHECK(std::fabs(got[i] - want[i]) <= 1e-5f * std::fabs(want[i]) + 1e-7f);
      }
    }
}

TEST_CASE("cuda silu_mul, add_rows, lerp, gather_rows, embed: as the host computes them") {
  test::Rng rng(5);
  const int64_t n = 1003;
  std::vector<float> a = rng.normals(static_cast<size_t>(n)), b = rng.normals(static_cast<size_t>(n));
  for (size_t i = 0; i < 20; ++i) a[i] *= 30.0f;  // the tails of exp
  {
    std::vector<float> want = a;
    silu_mul_reference({n, want.data(), b.data(), 1});
    DeviceBuffer da = upload(a), db = upload(b);
    silu_mul(kDev, {n, static_cast<float*>(da.data()), static_cast<const float*>(db.data()), 1});
    const std::vector<float> got = download<float>(da, a.size());
    for (size_t i = 0; i < got.size(); ++i) CHECK(std::fabs(got[i] - want[i]) <= 1e-6f * std::fabs(want[i]) + 1e-30f);
  }
  {
    const int64_t rows = 17, width = 54;
    for (int64_t group : {1, 3, 17}) {
      std::vector<float> x = rng.normals(static_cast<size_t>(rows * width));
      const std::vector<float> y = rng.normals(static_cast<size_t>((rows + group - 1) / group * width));
      std::vector<float> want = x;
      add_rows_host({rows, width, group, want.data(), y.data()});
      DeviceBuffer dx = upload(x), dy = upload(y);
      add_rows(kDev, {rows, width, group, static_cast<float*>(dx.data()), static_cast<const float*>(dy.data())});
      CHECK(download<float>(dx, x.size()) == want);
    }
  }
  {
    std::vector<float> want = a;
    lerp_host({n, want.data(), b.data(), 0.37f});
    DeviceBuffer da = upload(a), db = upload(b);
    lerp(kDev, {n, static_cast<float*>(da.data()), static_cast<const float*>(db.data()), 0.37f});
    CHECK(download<float>(da, a.size()) == want);
  }
  {
    const int64_t width = 97;
    const std::vector<float> x = rng.normals(static_cast<size_t>(10 * width));
    const std::vector<int32_t> index{9, 0, 3, 3, 7};
    std::vector<float> want(index.size() * static_cast<size_t>(width));
    gather_rows_host({5, width, index.data(), x.data(), want.data()});
    DeviceBuffer dx = upload(x), di = upload(index), dout(dev(), want.size() * sizeof(float));
    gather_rows(kDev, {5, width, static_cast<const int32_t*>(di.data()), static_cast<const float*>(dx.data()),
                       static_cast<float*>(dout.data())});
    CHECK(download<float>(dout, want.size()) == want);
  }
  for (DType dt : {DType::f32, DType::f16, DType::bf16}) {
    const int64_t vocab = 50, width = 17;
    const std::vector<unsigned char> table = random_kv(rng, dt, vocab * width);
    const std::vector<int32_t> ids{49, 0, 7, 7, 23, 1};
    std::vector<float> want(ids.size() * static_cast<size_t>(width));
    embed_host({6, width, ids.data(), table.data(), dt, want.data()});
    DeviceBuffer dt_table = upload(table), di = upload(ids), dout(dev(), want.size() * sizeof(float));
    embed(kDev, {6, width, static_cast<const int32_t*>(di.data()), dt_table.data(), dt, static_cast<float*>(dout.data())});
    CHECK(download<float>(dout, want.size()) == want);
  }
}

TEST_CASE("cuda rope: one section and three (time, height, width), far positions, strided heads") {
  for (int32_t sections : {1, 3}) {
    CAPTURE(sections);
    test::Rng rng(static_cast<uint64_t>(sections));
    const int64_t tokens = 17;
    const int32_t heads = 3, D = sections == 1 ? 54 : 64;
    const int64_t head_stride = D + 2, token_stride = heads * head_stride + 1;
    std::vector<float> x = rng.normals(static_cast<size_t>(tokens * token_stride));
    const std::vector<float> f0 = rope_inv_freq(sections == 1 ? D : 24, 10000.0), f1 = rope_inv_freq(20, 10000.0),
                             f2 = rope_inv_freq(20, 10000.0);
    std::vector<int64_t> pos(static_cast<size_t>(tokens * sections));
    for (auto& v : pos) v = rng.uniform(0, 200000);
    RopeParams p;
    p.tokens = tokens;
    p.heads = heads;
    p.head_dim = D;
    p.token_stride = token_stride;
    p.head_stride = head_stride;
    p.sections = sections;
    if (sections == 1) {
      p.section[0] = {0, D / 2, f0.data()};
    } else {
      p.section[0] = {0, 12, f0.data()};
      p.section[1] = {12, 10, f1.data()};
      p.section[2] = {22, 10, f2.data()};
    }
    std::vector<float> want = x;
    RopeParams hp = p;
    hp.x = want.data();
    hp.positions = pos.data();
    rope_reference(hp);
    DeviceBuffer dx = upload(x), dpos = upload(pos), d0 = upload(f0), d1 = upload(f1), d2 = upload(f2);
    p.x = static_cast<float*>(dx.data());
    p.positions = static_cast<const int64_t*>(dpos.data());
    p.section[0].inv_freq = static_cast<const float*>(d0.data());
    if (sections == 3) {
      p.section[1].inv_freq = static_cast<const float*>(d1.data());
      p.section[2].inv_freq = static_cast<const float*>(d2.data());
    }
    rope(kDev, p);
    CHECK(test::max_abs_diff(download<float>(dx, x.size()), want) <= 1e-6f);
  }
}

// ---------------------------------------------------------------------------
// The demos end to end, cuda against cpu.

std::vector<Event> run_all(Engine& e) {
  std::vector<Event> out;
  while (!e.idle())
    for (Event& ev : e.step()) out.push_back(std::move(ev));
  return out;
}

TEST_CASE("cuda end to end: the tts demo's greedy token streams equal the cpu backend's") {
  std::map<std::string, std::map<std::string, std::vector<int64_t>>> streams;  // backend -> id -> tokens
  for (const char* backend : {"cpu", "cuda"}) {
    auto engine =
        Engine::create(test::shipped("tts-demo.yaml", {std::string("backend=") + backend, "workload.requests.count=0"}));
    for (int i = 0; i < 6; ++i)
      engine->submit(nlohmann::json{{"id", fmt::format("g{}", i)},
                                    {"voice", i % 2 ? "bob" : "alice"},
                                    {"prompt", {5 + i, 6, 7 + 3 * i, 11}},
                                    {"max_tokens", 40 + 4 * i},
                                    {"sampling", {{"temperature", 0.0}}}});
    for (const Event& e : run_all(*engine)) {
      INFO(e.body.dump());
      REQUIRE(e.body["event"] != "error");
      if (e.body["event"] == "chunk")
        for (const auto& t : e.body["tokens"]) streams[backend][e.body["id"]].push_back(t.get<int64_t>());
    }
  }
  REQUIRE(streams["cpu"].size() == 6);
  for (const auto& [id, tokens] : streams["cpu"]) {
    CAPTURE(id);
    CHECK(!tokens.empty());
    CHECK(streams["cuda"][id] == tokens);
  }
}

TEST_CASE("cuda end to end: the world demo's frames match the cpu backend's mean and std within 1e-3") {
  std::map<std::string, std::map<std::pair<std::string, int64_t>, std::pair<double, double>>> frames;
  for (const char* backend : {"cpu", "cuda"}) {
    auto engine =
        Engine::create(test::shipped("world-demo.yaml", {std::string("backend=") + backend, "workload.requests.count=0"}));
    for (int i = 0; i < 2; ++i) engine->submit(nlohmann::json{{"id", fmt::format("w{}", i)}, {"frames", 4}, {"seed", 10 + i}});
    for (const Event& e : run_all(*engine)) {
      INFO(e.body.dump());
      REQUIRE(e.body["event"] != "error");
      if (e.body["event"] == "frame")
        frames[backend][{e.body["id"].get<std::string>(), e.body["frame"].get<int64_t>()}] = {e.body["mean"].get<double>(),
                                                                           e.body["std"].get<double>()};
    }
  }
  REQUIRE(frames["cpu"].size() == 8);
  REQUIRE(frames["cuda"].size() == 8);
  for (const auto& [key, ms] : frames["cpu"]) {
    CAPTURE(key.first);
    CAPTURE(key.second);
    const auto [mean, sd] = frames["cuda"][key];
    CHECK(std::fabs(mean - ms.first) <= 1e-3 * std::max(std::fabs(ms.first), sd) + 1e-6);
    CHECK(std::fabs(sd - ms.second) <= 1e-3 * std::fabs(ms.second) + 1e-6);
  }
}

}  // namespace

// Lists tests (ctest's discovery, at build time, on any machine) or, when a
// usable GPU is visible, runs them; otherwise says why and exits 77, the
// code the ctest registration counts as skipped.
int main(int argc, char** argv) {
  bool listing = false;
  for (int i = 1; i < argc; ++i) {
    std::string_view a = argv[i];
    if (a.empty() || a[0] != '-') continue;
    while (!a.empty() && a[0] == '-') a.remove_prefix(1);
    if (a.rfind("dt-", 0) == 0) a.remove_prefix(3);
    if (a.rfind("list", 0) == 0 || a == "ltc" || a == "lts" || a == "lr" || a == "help" || a == "h" || a == "?" ||
        a == "version" || a == "v" || a.rfind("count", 0) == 0 || a == "c")
      listing = true;
  }
  if (!listing) {
    std::string why;
    if (!backend_available(Backend::cuda, &why)) {
      std::printf("skipped: no GPU visible: %s\n", why.c_str());
      return 77;
    }
  }
  doctest::Context context(argc, argv);
  return context.run();
}
