#include "bench/kernels.h"
#include "bench/timing.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <random>

#include <fmt/format.h>

#include "kernels/bounded_kv.h"
#include "core/allocator.h"
#include "core/checked.h"
#include "core/errors.h"
#include "resources/options.h"
#include "resources/ring_kv/manager.h"
#include "resources/staging.h"

namespace mstar::bench {

namespace {

// Random numbers into a buffer of the backend's memory. A repeating block
// keeps filling fast for multi-GiB pools.
void fill_random(Allocator& alloc, void* dst, DType dtype, int64_t count, uint64_t seed) {
  std::mt19937_64 g(seed);
  std::normal_distribution<float> n;
  std::vector<float> block(4096);
  for (auto& x : block) x = n(g);
  constexpr int64_t kChunk = 1 << 20;
  std::vector<unsigned char> host(row_bytes(dtype, kChunk));
  for (int64_t at = 0; at < count; at += kChunk) {
    const int64_t len = std::min(kChunk, count - at);
    for (int64_t i = 0; i < len; ++i) store_from_f32(host.data(), dtype, static_cast<size_t>(i), block[static_cast<size_t>((at + i) % 4096)]);
    alloc.copy_from_host(static_cast<unsigned char*>(dst) + row_bytes(dtype, at), host.data(), row_bytes(dtype, len));
  }
}

// A host vector copied into the backend's memory.
template <class T>
DeviceBuffer uploaded(Allocator& alloc, const std::vector<T>& v) {
  DeviceBuffer b(alloc, v.size() * sizeof(T));
  if (!v.empty()) alloc.copy_from_host(b.data(), v.data(), v.size() * sizeof(T));
  return b;
}

// The figures of sorted call times us.
void time_into(const std::vector<double>& us, KernelResult& r) {
  r.median_us = us[us.size() / 2];
  r.min_us = us.front();
  r.max_us = us.back();
  r.gbs = static_cast<double>(r.kv_bytes) / (r.median_us * 1e-6) / 1e9;
  r.gflops = r.flops / (r.median_us * 1e-6) / 1e9;
}

KernelResult bench_bounded(const KernelShape& s, Backend backend, bool cold, int repeats, int64_t llc) {
  KernelResult r{s, backend, cold};
  Allocator& alloc = allocator_for(backend);
  const int64_t D = s.head_dim, H = s.kv_heads, es = static_cast<int64_t>(row_bytes(s.dtype, 1));
  const int64_t read = s.sink + s.kv_len;
  const int64_t slot_tokens = read + s.q_tokens;  // room for the step's writes after the read ranges
  const int64_t slot_bytes = H * slot_tokens * 2 * D * es;
  int64_t slots = s.batch;
  if (cold) slots = std::max<int64_t>(s.batch, (4 * llc + slot_bytes - 1) / slot_bytes);
  DeviceBuffer pool(alloc, static_cast<size_t>(slots * slot_bytes));
  fill_random(alloc, pool.data(), s.dtype, slots * H * slot_tokens * 2 * D, 1);
  r.kv_bytes = s.batch * H * read * 2 * D * es;
  r.flops = 4.0 * static_cast<double>(s.batch * s.q_heads * s.q_tokens * (read + s.q_tokens) * D);

  const DeviceBuffer q = uploaded(alloc, std::vector<float>(static_cast<size_t>(s.batch * s.q_tokens * s.q_heads * D), 0.1f));
  const DeviceBuffer k = uploaded(alloc, std::vector<float>(static_cast<size_t>(s.batch * s.q_tokens * H * D), 0.2f));
  const DeviceBuffer v = uploaded(alloc, std::vector<float>(static_cast<size_t>(s.batch * s.q_tokens * H * D), 0.3f));
  DeviceBuffer out(alloc, static_cast<size_t>(s.batch * s.q_tokens * s.q_heads * D) * sizeof(float));
  std::vector<int32_t> indptr(static_cast<size_t>(s.batch + 1));
  for (int64_t b = 0; b <= s.batch; ++b) indptr[static_cast<size_t>(b)] = static_cast<int32_t>(b * s.q_tokens);
  const DeviceBuffer indptr_dev = uploaded(alloc, indptr);
  Staged<kernels::BoundedRowTable> table;
  Staged<kernels::BoundedRowAddress> addr;
  table.host.resize(static_cast<size_t>(s.batch));
  addr.host.resize(static_cast<size_t>(s.batch));
  kernels::BoundedAttentionParams p;
  p.rows = static_cast<int32_t>(s.batch);
  p.num_kv_heads = static_cast<int32_t>(H);
  p.num_q_heads = static_cast<int32_t>(s.q_heads);
  p.head_dim = static_cast<int32_t>(D);
  p.kv_dtype = s.dtype;
  p.mask = s.q_tokens > 1 ? kernels::StepMask::causal : kernels::StepMask::full;
  p.scale = 1.0f / std::sqrt(static_cast<float>(D));
  p.threads = s.threads;
  p.q_indptr = static_cast<const int32_t*>(indptr_dev.data());
  p.kv_indptr = p.q_indptr;
  p.q = static_cast<const float*>(q.data());
  p.q_token_stride = s.q_heads * D;
  p.q_head_stride = D;
  p.k = static_cast<const float*>(k.data());
  p.v = static_cast<const float*>(v.data());
  p.kv_token_stride = H * D;
  p.kv_head_stride = D;
  p.out = static_cast<float*>(out.data());
  p.out_token_stride = s.q_heads * D;
  p.out_head_stride = D;
  auto prepare = [&](int i) {
    for (int64_t b = 0; b < s.batch; ++b) {
      const int64_t slot = cold ? (static_cast<int64_t>(i) * s.batch + b) % slots : b;
      auto& t = table.host[static_cast<size_t>(b)];
      t = {};
      t.slot = static_cast<int32_t>(slot);
      t.reads[0] = {0, 0, static_cast<int32_t>(s.sink)};                               // the sink
      t.reads[1] = {0, static_cast<int32_t>(s.sink), static_cast<int32_t>(s.kv_len)};  // the window
      addr.host[static_cast<size_t>(b)].slot = static_cast<unsigned char*>(pool.data()) + slot * slot_bytes;
      addr.host[static_cast<size_t>(b)].slot_head_stride = slot_tokens * 2 * D;
    }
    p.table = table.upload(alloc);
    p.address = addr.upload(alloc);
  };
  time_into(time_calls(backend, prepare, [&](int) { kernels::bounded_attention(backend, p); }, repeats), r);
  return r;
}

KernelResult bench_ring(const KernelShape& s, Backend backend, bool cold, int repeats, int64_t llc) {
  KernelResult r{s, backend, cold};
  Allocator& alloc = allocator_for(backend);
  const int64_t D = s.head_dim, H = s.kv_heads, T = s.q_tokens, es = static_cast<int64_t>(row_bytes(s.dtype, 1));
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
  RingKVManager ring(RingKVSpec{"bench", {}, c}, ResourceOptions{backend, s.threads});
  const DeviceBuffer k = uploaded(alloc, std::vector<float>(static_cast<size_t>(s.batch * T * H * D), 0.25f));
  const DeviceBuffer q = uploaded(alloc, std::vector<float>(static_cast<size_t>(s.batch * T * s.q_heads * D), 0.1f));
  DeviceBuffer out(alloc, static_cast<size_t>(s.batch * T * s.q_heads * D) * sizeof(float));
  const Device dev = alloc.device();
  auto kv_view = [&](int64_t rows) {
    return ConstTensorView{k.data(), DType::f32, Shape{rows * T, H, D}, Shape{H * D, D, 1}, dev};
  };
  // One session per request; each request's clock moves on every call.
  std::vector<int64_t> next(static_cast<size_t>(sessions), 0);
  for (int64_t i = 0; i < sessions; ++i) ring.ingest_request(fmt::format("s{}", i));
  auto step_of = [&](const std::vector<int64_t>& ids, Step& st, StepContext& ctx) {
    st = {};
    ctx = {};
    for (int64_t id : ids) {
      const std::string rid = fmt::format("s{}", id);
      st.segments.push_back({rid, "frame", T});
      st.frames[rid] = next[static_cast<size_t>(id)];
      ctx.add_rows(rid, 1);
    }
    if (!ring.admit(st, ctx).ok()) throw InputError("bench ring: a step was refused");
    ring.plan(st, ctx);
  };
  // Fill every session's ring so every slot is written and visible: one
  // step per frame, up to `batch` sessions a step (the buffers above hold
  // that many rows).
  Step st;
  StepContext ctx;
  for (int64_t first = 0; first < sessions; first += s.batch) {
    std::vector<int64_t> ids;
    for (int64_t id = first; id < std::min(sessions, first + s.batch); ++id) ids.push_back(id);
    for (int64_t f = 0; f < frames; ++f) {
      step_of(ids, st, ctx);
      ring.upsert(0, kv_view(static_cast<int64_t>(ids.size())), kv_view(static_cast<int64_t>(ids.size())), true);
      ring.commit(st, ctx);
      for (int64_t id : ids) ++next[static_cast<size_t>(id)];
    }
  }
  r.kv_bytes = s.batch * 2 * H * (frames + 1) * T * D * es;  // the visible ring (all but one frame) plus the new frame
  r.flops = 4.0 * static_cast<double>(s.batch * s.q_heads * T * frames * T * D);
  std::vector<int64_t> batch(static_cast<size_t>(s.batch));
  auto prepare = [&](int i) {
    for (int64_t b = 0; b < s.batch; ++b)
      batch[static_cast<size_t>(b)] = cold ? (static_cast<int64_t>(i) * s.batch + b) % sessions : b;
    step_of(batch, st, ctx);
  };
  auto call = [&](int) {
    ring.upsert(0, kv_view(s.batch), kv_view(s.batch), true);
    ring.attend(0, ConstTensorView{q.data(), DType::f32, Shape{s.batch * T, s.q_heads, D}, Shape{s.q_heads * D, D, 1}, dev},
                TensorView{out.data(), DType::f32, Shape{s.batch * T, s.q_heads, D}, Shape{s.q_heads * D, D, 1}, dev});
    ring.commit(st, ctx);  // the clocks move on; the ring is always full
    for (int64_t id : batch) ++next[static_cast<size_t>(id)];
  };
  time_into(time_calls(backend, prepare, call, repeats), r);
  return r;
}

}  // namespace

void check_kernel_shape(const KernelShape& s, Backend backend) {
  const std::string shape = fmt::format("--kv-len {}, --sink {}, --q-tokens {}, --batch {}, --kv-heads {}, --q-heads {}, "
                                        "--head-dim {}, {}",
                                        s.kv_len, s.sink, s.q_tokens, s.batch, s.kv_heads, s.q_heads, s.head_dim,
                                        to_string(s.dtype));
  for (auto [name, v] : {std::pair<const char*, int64_t>{"--kv-len", s.kv_len}, {"--q-tokens", s.q_tokens},
                         {"--batch", s.batch}, {"--kv-heads", s.kv_heads}, {"--q-heads", s.q_heads},
                         {"--head-dim", s.head_dim}})
    if (v < 1) throw ConfigError(fmt::format("{} must be at least 1, got {}", name, v));
  if (s.sink < 0) throw ConfigError(fmt::format("--sink must not be negative, got {}", s.sink));
  if (s.threads < 1) throw ConfigError(fmt::format("--threads must be at least 1, got {}", s.threads));
  // The kernels address a row's entries and a batch's tokens with int32.
  const auto tokens = checked_add(checked_add(s.sink, s.kv_len).value_or(INT64_MAX), s.q_tokens);
  if (!tokens || *tokens > INT32_MAX)
    throw ConfigError(fmt::format("{}: a row's {} entries (sink + kv_len + q_tokens) pass the kernels' int32 offsets",
                                  shape, tokens.value_or(INT64_MAX)));
  const auto q_rows = checked_mul(s.batch, s.q_tokens);
  if (!q_rows || *q_rows > INT32_MAX || s.q_heads > INT32_MAX || s.head_dim > INT32_MAX)
    throw ConfigError(fmt::format("{}: --batch x --q-tokens passes the kernels' int32 row counts", shape));
  // What the benchmark allocates (the hot pool, its queries, keys, values and
  // outputs in f32), before allocating it.
  const int64_t es = static_cast<int64_t>(row_bytes(s.dtype, 1));
  const auto kv = s.kind == "ring" ? checked_product({s.batch + 1, 2, s.kv_heads, *tokens, s.head_dim, es})
                                   : checked_product({s.batch, s.kv_heads, *tokens, 2, s.head_dim, es});
  const auto io = checked_product({s.batch, s.q_tokens, 2 * s.q_heads + 2 * s.kv_heads, s.head_dim, 4});
  uint64_t bytes = UINT64_MAX;
  if (kv && io && *kv <= UINT64_MAX - *io) bytes = *kv + *io;
  check_fits_memory(shape, bytes, backend);
}

KernelResult bench_kernel(const KernelShape& s, Backend backend, bool cold, int repeats, int64_t llc_bytes) {
  check_kernel_shape(s, backend);
  if (s.q_heads % s.kv_heads != 0)
    throw ConfigError(fmt::format("q_heads {} must be a multiple of kv_heads {}", s.q_heads, s.kv_heads));
  if (s.kind == "ring") return bench_ring(s, backend, cold, repeats, llc_bytes);
  if (s.kind == "decode" || s.kind == "chunk") return bench_bounded(s, backend, cold, repeats, llc_bytes);
  throw ConfigError(fmt::format("kernel kind '{}' (expected decode, chunk or ring)", s.kind));
}

}  // namespace mstar::bench
