// The cpu backend's body for one instruction set (the run's --isa,
// isa_main.cpp) against the reference, at the kernel interface: both kernels,
// f32/f16/bf16 caches, grouped-query and multi-head, causal fresh entries,
// odd head dims (the portable path) and the fast ones (64, 128), entry
// counts that are neither whole chunks nor whole key steps (2, 17, 27, 54,
// 97, 150 entries). The backend itself runs only the best body the
// processor has, so the others are covered here.
//
// Tolerance: max abs difference on outputs of O(1), 1e-4 for every dtype and
// body. Both sides read the same stored (already rounded) keys and values and
// accumulate in f32 or better, so the dtype adds no error of its own; what is
// left is summation order and the vector exp (relative error 2e-7).
#include <doctest/doctest.h>

#include <cmath>
#include <cstring>

#include "core/buffer.h"
#include "core/errors.h"
#include "kernels/cpu/attention_cpu.h"
#include "isa.h"
#include "kernels/rope.h"
#include "support.h"

using namespace mstar;
using namespace mstar::kernels;

namespace {

float tolerance(DType) { return 1e-4f; }

struct Case {
  int32_t D, H, group, slot_tokens, source_len, span, q_len;
  DType dt;
  StepMask mask;
  bool rope = false;
};

// Runs one row through `run` on fresh copies of the same slot and inputs;
// returns outputs and the slot's bytes afterwards. The row reads 2 entries,
// source_len / 2 from the source and slot_tokens / 2 from the slot.
template <class Run>
std::pair<std::vector<float>, std::vector<unsigned char>> run_case(const Case& c, Run run) {
  test::Rng rng(static_cast<uint64_t>(c.D * 131 + c.span * 7 + c.group));
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
  const std::vector<float> inv = rope_inv_freq(c.D, 10000.0);

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
  p.rope_inv_freq = c.rope ? inv.data() : nullptr;
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

void check_bounded(const Case& c) {
  const auto want = run_case(c, [](const BoundedAttentionParams& p) { bounded_attention_reference(p); });
  for (int threads : {1, 2}) {
    const auto got = run_case(c, [&](BoundedAttentionParams p) {
      p.threads = threads;
      bounded_attention_cpu_isa(p, test::isa_under_test());
    });
    CHECK(test::max_abs_diff(got.first, want.first) <= tolerance(c.dt));
    CHECK(got.second == want.second);  // attention only reads: both leave the slot as it was
  }
}

}  // namespace

TEST_CASE("cpu body agrees with the reference: bounded, short reads, odd and fast head dims") {
  for (int32_t D : {17, 54, 97, 64, 128})
    for (DType dt : {DType::f32, DType::f16, DType::bf16})
      for (StepMask mask : {StepMask::full, StepMask::causal})
        for (int32_t group : {1, 3}) {  // multi-head, grouped (and query blocks of 4 + 1 or 2 rows)
          CAPTURE(D);
          CAPTURE(to_string(dt));
          CAPTURE(group);
          // Reads of 27, 48 and 2 entries, 17 fresh.
          check_bounded(Case{D, 2, group, 97, 54, 17, mask == StepMask::causal ? 9 : 3, dt, mask});
        }
}

TEST_CASE("cpu body agrees with the reference: bounded, reads and fresh entries over several chunks") {
  for (int32_t D : {64, 128, 54})
    for (DType dt : {DType::f32, DType::f16, DType::bf16})
      for (int32_t group : {1, 4}) {
        CAPTURE(D);
        CAPTURE(to_string(dt));
        CAPTURE(group);
        // Reads of 97, 150 and 2 entries: whole and partial chunks, prefetches
        // past the end of a read; one query token (decode) and a causal chunk.
        check_bounded(Case{D, 2, group, 301, 194, 1, 1, dt, StepMask::full});
        check_bounded(Case{D, 2, group, 301, 194, 17, 5, dt, StepMask::causal});
        // 150 fresh entries for 150 or 97 causal query tokens (a prefill
        // chunk): in each 64-entry chunk of them the rows that see it whole
        // take the vector body, the rows the mask cuts the portable fold, and
        // the first rows see none of the later chunks; and 7 tokens under a
        // full mask, every row seeing every chunk whole.
        check_bounded(Case{D, 2, group, 97, 54, 150, 150, dt, StepMask::causal});
        check_bounded(Case{D, 2, group, 97, 54, 150, 97, dt, StepMask::causal});
        check_bounded(Case{D, 2, group, 97, 54, 150, 7, dt, StepMask::full});
      }
}

TEST_CASE("cpu body agrees with the reference: bounded, keys rotated on read") {
  for (int32_t D : {64, 54})
    for (DType dt : {DType::f32, DType::f16, DType::bf16}) {
      CAPTURE(D);
      CAPTURE(to_string(dt));
      Case c{D, 2, 4, 97, 54, 5, 2, dt, StepMask::causal};
      c.rope = true;
      check_bounded(c);
    }
}

TEST_CASE("cpu body agrees with the reference: ring, odd and fast head dims") {
  for (int32_t D : {17, 54, 97, 64, 128})
    for (DType dt : {DType::f32, DType::f16, DType::bf16})
      for (int32_t Hq : {2, 6}) {  // multi-head and grouped
        CAPTURE(D);
        CAPTURE(to_string(dt));
        CAPTURE(Hq);
        test::Rng rng(static_cast<uint64_t>(D) * 7 + static_cast<uint64_t>(dt) + static_cast<uint64_t>(Hq));
        const int32_t H = 2, T = 3, rows = 3;
        const int64_t slots = 301;
        HostBuffer kv(dt, Shape{2, H, slots, D});
        for (int64_t i = 0; i < kv.shape().numel(); ++i) store_from_f32(kv.data(), dt, static_cast<size_t>(i), rng.normal());
        std::vector<int64_t> lo{0, 30, 97}, hi{30, 97, 301};  // each row's session span
        // Random visible runs inside each row's span: short ones in the first
        // row, runs over several chunks in the last.
        std::vector<int32_t> indptr{0};
        std::vector<RingRange> ranges;
        for (int r = 0; r < rows; ++r) {
          int64_t run = -1;
          for (int64_t i = lo[static_cast<size_t>(r)]; i <= hi[static_cast<size_t>(r)]; ++i) {
            const bool vis = i < hi[static_cast<size_t>(r)] && rng.coin(r == 0 ? 0.7 : 0.985);
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
        for (int threads : {1, 2}) {
          p.out = got.data();
          p.threads = threads;
          ring_attention_cpu_isa(p, test::isa_under_test());
          CHECK(test::max_abs_diff(got, want) <= tolerance(dt));
        }
      }
}

TEST_CASE("ring tables: a visible run outside a row's span is refused on the host") {
  const std::vector<int32_t> indptr{0, 1, 2, 3};
  const std::vector<RingRange> bad{{40, 2}, {35, 3}, {60, 4}};
  const std::vector<int64_t> lo{0, 30, 54}, hi{30, 54, 97}, scratch{0, 30, 54}, ring{-1, -1, -1};
  CHECK_THROWS_WITH_AS(check_ring_tables(indptr, bad, scratch, ring, lo, hi, 1, 97),
                       "ring tables: row 0: visible slots [40, 42) outside its session span [0, 30)", InputError);
}
