#include "bench/kernels.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <random>

#include <fmt/format.h>

#include "bounded_attention.h"
#include "core/buffer.h"
#include "core/errors.h"
#include "resources/ring_kv/manager.h"

namespace mstar::bench {

namespace {

using Clock = std::chrono::steady_clock;

void fill_random(HostBuffer& b, uint64_t seed) {
  std::mt19937_64 g(seed);
  std::normal_distribution<float> n;
  const auto count = static_cast<size_t>(b.shape().numel());
  // A repeating block keeps filling fast for multi-GiB pools.
  std::vector<float> block(4096);
  for (auto& x : block) x = n(g);
  for (size_t i = 0; i < count; ++i) store_from_f32(b.data(), b.dtype(), i, block[i % block.size()]);
}

// Warm-up runs the call for at least 0.2 s first: on this class of machine
// the first milliseconds after a pause run several times slower (threads
// waking, clocks ramping), which a single warm-up call does not absorb.
template <class Call>
void time_calls(Call&& call, int repeats, KernelResult& r) {
  const auto warm = Clock::now();
  for (int i = 0; i < 1000 && (i == 0 || Clock::now() - warm < std::chrono::milliseconds(200)); ++i) call(i);
  std::vector<double> us;
  for (int i = 0; i < repeats; ++i) {
    const auto t0 = Clock::now();
    call(i + 1);
    us.push_back(std::chrono::duration<double, std::micro>(Clock::now() - t0).count());
  }
  std::sort(us.begin(), us.end());
  r.median_us = us[us.size() / 2];
  r.min_us = us.front();
  r.max_us = us.back();
  r.gbs = static_cast<double>(r.kv_bytes) / (r.median_us * 1e-6) / 1e9;
  r.gflops = r.flops / (r.median_us * 1e-6) / 1e9;
}

KernelResult bench_bounded(const KernelShape& s, Backend backend, bool cold, int repeats, int64_t llc) {
  KernelResult r{s, backend, cold};
  const int64_t D = s.head_dim, H = s.kv_heads, es = static_cast<int64_t>(dtype_size(s.dtype));
  const int64_t read = s.sink + s.kv_len;
  const int64_t slot_tokens = read + s.q_tokens;  // room for the step's writes after the read ranges
  const int64_t slot_bytes = H * slot_tokens * 2 * D * es;
  int64_t slots = s.batch;
  if (cold) slots = std::max<int64_t>(s.batch, (4 * llc + slot_bytes - 1) / slot_bytes);
  HostBuffer pool(s.dtype, Shape{slots, H, slot_tokens, 2 * D});
  fill_random(pool, 1);
  r.kv_bytes = s.batch * H * read * 2 * D * es;
  r.flops = 4.0 * static_cast<double>(s.batch * s.q_heads * s.q_tokens * (read + s.q_tokens) * D);

  std::vector<float> q(static_cast<size_t>(s.batch * s.q_tokens * s.q_heads * D), 0.1f),
      k(static_cast<size_t>(s.batch * s.q_tokens * H * D), 0.2f), v(k.size(), 0.3f), out(q.size());
  std::vector<int32_t> q_indptr(static_cast<size_t>(s.batch + 1)), kv_indptr(q_indptr.size());
  for (int64_t b = 0; b <= s.batch; ++b)
    q_indptr[static_cast<size_t>(b)] = kv_indptr[static_cast<size_t>(b)] = static_cast<int32_t>(b * s.q_tokens);
  std::vector<kernels::BoundedRowTable> table(static_cast<size_t>(s.batch));
  std::vector<kernels::BoundedRowAddress> addr(static_cast<size_t>(s.batch));
  kernels::BoundedAttentionParams p;
  p.rows = static_cast<int32_t>(s.batch);
  p.num_kv_heads = static_cast<int32_t>(H);
  p.num_q_heads = static_cast<int32_t>(s.q_heads);
  p.head_dim = static_cast<int32_t>(D);
  p.kv_dtype = s.dtype;
  p.mask = s.q_tokens > 1 ? kernels::StepMask::causal : kernels::StepMask::full;
  p.scale = 1.0f / std::sqrt(static_cast<float>(D));
  p.threads = s.threads;
  p.table = table.data();
  p.address = addr.data();
  p.q_indptr = q_indptr.data();
  p.kv_indptr = kv_indptr.data();
  p.q = q.data();
  p.q_token_stride = s.q_heads * D;
  p.q_head_stride = D;
  p.k = k.data();
  p.v = v.data();
  p.kv_token_stride = H * D;
  p.kv_head_stride = D;
  p.out = out.data();
  p.out_token_stride = s.q_heads * D;
  p.out_head_stride = D;
  auto call = [&](int i) {
    for (int64_t b = 0; b < s.batch; ++b) {
      const int64_t slot = cold ? (static_cast<int64_t>(i) * s.batch + b) % slots : b;
      auto& t = table[static_cast<size_t>(b)];
      t = {};
      t.slot = static_cast<int32_t>(slot);
      t.reads[0] = {0, 0, static_cast<int32_t>(s.sink)};                                  // the sink
      t.reads[1] = {0, static_cast<int32_t>(s.sink), static_cast<int32_t>(s.kv_len)};     // the window
      t.writes[0] = {0, 1, static_cast<int32_t>(read), static_cast<int32_t>(s.q_tokens)};  // a decode step's write
      addr[static_cast<size_t>(b)].slot = static_cast<unsigned char*>(pool.data()) + slot * slot_bytes;
      addr[static_cast<size_t>(b)].slot_head_stride = slot_tokens * 2 * D;
    }
    kernels::bounded_attention(backend, p);
  };
  time_calls(call, repeats, r);
  return r;
}

KernelResult bench_ring(const KernelShape& s, Backend backend, bool cold, int repeats, int64_t llc) {
  KernelResult r{s, backend, cold};
  const int64_t D = s.head_dim, H = s.kv_heads, T = s.q_tokens, es = static_cast<int64_t>(dtype_size(s.dtype));
  const int64_t frames = std::max<int64_t>(1, s.kv_len / T);
  const int64_t session_bytes = 2 * H * (frames + 1) * T * D * es;
  int64_t sessions = s.batch;
  if (cold) sessions = std::max<int64_t>(s.batch, (4 * llc + session_bytes - 1) / session_bytes);
  // The resource itself, one layer: upsert and attend as the engine does.
  RingKVConfig c;
  c.num_layers = 1;
  c.num_kv_heads = H;
  c.head_dim = D;
  c.tokens_per_frame = T;
  c.layers = {RingGeometry{frames, frames, 1}};
  c.num_sessions = sessions;
  c.dtype = s.dtype;
  RingKVManager ring(RingKVSpec{"bench", {}, c}, RingKVOptions{backend, s.threads});
  // Fill every session's ring so every slot is written and visible.
  std::vector<float> one(static_cast<size_t>(H * T * D), 0.5f);
  for (int64_t sess = 0; sess < sessions; ++sess)
    for (int64_t f = 0; f < frames; ++f) {
      const std::vector<int64_t> pos{f};
      (void)ring.upsert(0, RingPlan{{static_cast<int32_t>(sess)}}, f32_view(one.data(), Shape{1, H, T, D}),
                        f32_view(one.data(), Shape{1, H, T, D}), pos, UpsertOptions{true, false});
    }
  r.kv_bytes = s.batch * 2 * H * (frames + 1) * T * D * es;  // the visible ring (all but one frame) plus the new frame
  r.flops = 4.0 * static_cast<double>(s.batch * s.q_heads * T * frames * T * D);
  std::vector<float> k(static_cast<size_t>(s.batch * H * T * D), 0.25f),
      q(static_cast<size_t>(s.batch * T * s.q_heads * D), 0.1f), out(q.size());
  RingPlan plan{std::vector<int32_t>(static_cast<size_t>(s.batch))};
  std::vector<int64_t> pos(static_cast<size_t>(s.batch));
  auto call = [&](int i) {
    for (int64_t b = 0; b < s.batch; ++b) {
      plan.session[static_cast<size_t>(b)] = static_cast<int32_t>(cold ? (static_cast<int64_t>(i) * s.batch + b) % sessions : b);
      pos[static_cast<size_t>(b)] = frames + i;  // the clock moves on; the ring is always full
    }
    const Shape sh{s.batch, H, T, D};
    const RingUpsert up = ring.upsert(0, plan, f32_view(k.data(), sh), f32_view(k.data(), sh), pos, UpsertOptions{true, true});
    ring.attend(0, up, f32_view(q.data(), Shape{s.batch * T, s.q_heads, D}), f32_view(out.data(), Shape{s.batch * T, s.q_heads, D}));
  };
  time_calls(call, repeats, r);
  return r;
}

}  // namespace

KernelResult bench_kernel(const KernelShape& s, Backend backend, bool cold, int repeats, int64_t llc_bytes) {
  if (s.q_heads % s.kv_heads != 0)
    throw ConfigError(fmt::format("q_heads {} must be a multiple of kv_heads {}", s.q_heads, s.kv_heads));
  if (s.kind == "ring") return bench_ring(s, backend, cold, repeats, llc_bytes);
  if (s.kind == "decode" || s.kind == "chunk") return bench_bounded(s, backend, cold, repeats, llc_bytes);
  throw ConfigError(fmt::format("kernel kind '{}' (expected decode, chunk or ring)", s.kind));
}

}  // namespace mstar::bench
