// Every body of the cpu backend (generic, AVX2) against the reference, at the
// kernel interface, on odd head sizes. The backend itself runs only the best
// body this processor has, so the others are covered here.
#include <doctest/doctest.h>

#include <cmath>
#include <cstring>

#include "core/buffer.h"
#include "core/errors.h"
#include "cpu/attention_cpu.h"
#include "support.h"

using namespace mstar;
using namespace mstar::kernels;

namespace {

struct Case {
  int32_t D, H, group, slot_tokens, source_len, span, q_len;
  DType dt;
  StepMask mask;
};

// Runs one row through `run` on fresh copies of the same slot and inputs;
// returns outputs and the slot's bytes afterwards.
template <class Run>
std::pair<std::vector<float>, std::vector<unsigned char>> run_case(const Case& c, Run run) {
  test::Rng rng(static_cast<uint64_t>(c.D * 131 + c.span));
  HostBuffer slot(c.dt, Shape{c.H, c.slot_tokens, 2 * c.D});
  HostBuffer source(c.dt, Shape{c.H, c.source_len, 2 * c.D});
  for (int64_t i = 0; i < slot.shape().numel(); ++i) store_from_f32(slot.data(), c.dt, static_cast<size_t>(i), rng.normal());
  for (int64_t i = 0; i < source.shape().numel(); ++i)
    store_from_f32(source.data(), c.dt, static_cast<size_t>(i), rng.normal());
  const int32_t Hq = c.H * c.group;
  std::vector<float> q = rng.normals(static_cast<size_t>(c.q_len * Hq * c.D));
  std::vector<float> k = rng.normals(static_cast<size_t>(c.span * c.H * c.D));
  std::vector<float> v = rng.normals(static_cast<size_t>(c.span * c.H * c.D));
  std::vector<float> out(q.size(), -1.0f);

  BoundedRowTable t;
  t.slot = 0;
  t.reads[0] = {1, 0, c.source_len / 2};
  t.reads[1] = {0, 3, c.slot_tokens / 2};
  t.reads[2] = {0, 0, 2};
  t.writes[0] = {c.span - 1, -1, 5, c.span / 3};
  const BoundedRowAddress a{slot.data(), source.data(), static_cast<int64_t>(c.slot_tokens) * 2 * c.D,
                            static_cast<int64_t>(c.source_len) * 2 * c.D};
  const int32_t q_indptr[2] = {0, c.q_len}, kv_indptr[2] = {0, c.span};
  BoundedAttentionParams p;
  p.rows = 1;
  p.num_kv_heads = c.H;
  p.num_q_heads = Hq;
  p.head_dim = c.D;
  p.kv_dtype = c.dt;
  p.mask = c.mask;
  p.scale = 1.0f / std::sqrt(static_cast<float>(c.D));
  p.table = &t;
  p.address = &a;
  p.q_indptr = q_indptr;
  p.kv_indptr = kv_indptr;
  p.q = q.data();
  p.q_token_stride = Hq * c.D;
  p.q_head_stride = c.D;
  p.k = k.data();
  p.v = v.data();
  p.kv_token_stride = c.H * c.D;
  p.kv_head_stride = c.D;
  p.out = out.data();
  p.out_token_stride = Hq * c.D;
  p.out_head_stride = c.D;
  run(p);
  const auto* bytes = static_cast<const unsigned char*>(slot.data());
  return {out, std::vector<unsigned char>(bytes, bytes + slot.bytes())};
}

}  // namespace

TEST_CASE("cpu bodies agree with the reference on odd sizes and the fast head dims (64, 128)") {
  for (int32_t D : {17, 54, 97, 64, 128})
    for (DType dt : {DType::f32, DType::f16, DType::bf16})
      for (StepMask mask : {StepMask::full, StepMask::causal}) {
        CAPTURE(D);
        CAPTURE(to_string(dt));
        const Case c{D, 2, 3, 97, 54, 17, mask == StepMask::causal ? 9 : 3, dt, mask};
        const auto want = run_case(c, [](const BoundedAttentionParams& p) { bounded_attention_reference(p); });
        for (CpuIsa isa : {CpuIsa::generic, CpuIsa::avx2}) {
          if (!cpu_supports(isa)) continue;
          for (int threads : {1, 2}) {
            const auto got = run_case(c, [&](BoundedAttentionParams p) {
              p.threads = threads;
              bounded_attention_cpu_isa(p, isa);
            });
            CHECK(test::max_abs_diff(got.first, want.first) <= 1e-4f);
            CHECK(got.second == want.second);  // attention only reads: both leave the slot as it was
          }
        }
      }
}

TEST_CASE("cpu ring bodies agree with the reference on odd sizes and the fast head dims (64, 128)") {
  for (int32_t D : {17, 54, 97, 64, 128})
    for (DType dt : {DType::f32, DType::f16, DType::bf16}) {
      CAPTURE(D);
      CAPTURE(to_string(dt));
      test::Rng rng(static_cast<uint64_t>(D) * 7 + static_cast<uint64_t>(dt));
      const int32_t H = 2, Hq = 6, T = 3, rows = 3;
      const int64_t slots = 97;
      HostBuffer kv(dt, Shape{2, H, slots, D});
      for (int64_t i = 0; i < kv.shape().numel(); ++i) store_from_f32(kv.data(), dt, static_cast<size_t>(i), rng.normal());
      std::vector<int64_t> lo{0, 30, 54}, hi{30, 54, 97};  // each row's session span
      // Random visible runs inside each row's span.
      std::vector<int32_t> indptr{0};
      std::vector<RingRange> ranges;
      for (int r = 0; r < rows; ++r) {
        int64_t run = -1;
        for (int64_t i = lo[static_cast<size_t>(r)]; i <= hi[static_cast<size_t>(r)]; ++i) {
          const bool vis = i < hi[static_cast<size_t>(r)] && rng.coin(0.7);
          if (vis && run < 0) run = i;
          if (!vis && run >= 0) ranges.push_back({run, i - run}), run = -1;
        }
        indptr.push_back(static_cast<int32_t>(ranges.size()));
      }
      std::vector<float> q = rng.normals(static_cast<size_t>(rows * T * Hq * D));
      RingAttentionParams p;
      p.rows = rows;
      p.num_kv_heads = H;
      p.num_q_heads = Hq;
      p.head_dim = D;
      p.q_tokens = T;
      p.kv_dtype = dt;
      p.scale = 0.3f;
      p.kv = kv.data();
      p.total_slots = slots;
      p.range_indptr = indptr.data();
      p.ranges = ranges.data();
      p.q = q.data();
      p.q_token_stride = Hq * D;
      p.q_head_stride = D;
      p.out_token_stride = Hq * D;
      p.out_head_stride = D;
      std::vector<float> want(q.size()), got(q.size());
      p.out = want.data();
      ring_attention(Backend::reference, p);
      for (CpuIsa isa : {CpuIsa::generic, CpuIsa::avx2}) {
        if (!cpu_supports(isa)) continue;
        p.out = got.data();
        p.threads = 2;
        ring_attention_cpu_isa(p, isa);
        CHECK(test::max_abs_diff(got, want) <= 1e-4f);
      }
      // A visible run outside a row's span is refused on the host, before any backend runs.
      std::vector<RingRange> bad = ranges;
      bad.front() = {40, 2};
      const std::vector<int64_t> scratch{0, 30, 54}, ring{-1, -1, -1};
      CHECK_THROWS_WITH_AS(check_ring_tables(indptr, bad, scratch, ring, lo, hi, 1, slots),
                           "ring tables: row 0: visible slots [40, 42) outside its session span [0, 30)", InputError);
    }
}
