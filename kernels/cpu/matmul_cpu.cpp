// The cpu backend's matrix product: panels for few rows, packed tiles for
// many, pair panels for any (matmul_cpu.h says why), all spread over the
// pool's threads by output columns, so every thread reads a disjoint share
// of the weights.
#include "kernels/cpu/matmul_cpu.h"

#include <algorithm>
#include <mutex>
#include <vector>

#include "core/dtype.h"
#include "core/errors.h"
#include "core/ggml_blocks.h"
#include "kernels/cpu/thread_pool.h"
#include "kernels/op_table.h"

namespace mstar::kernels {

namespace {

struct Bodies {
  void (*panel)(const MatmulParams&, int64_t, int64_t);
  int64_t (*packed_cols)();
  void (*packed)(const MatmulParams&, int64_t, int64_t, float*);
  void (*panel_q8)(const MatmulParams&, const unsigned char*, const float*, int64_t, int64_t);
};

Bodies bodies(CpuIsa isa) {
#if defined(__x86_64__)
  if (isa == CpuIsa::avx2)
    return {&avx2::matmul_panel, &avx2::matmul_packed_cols, &avx2::matmul_packed, &avx2::matmul_panel_q8};
  if (has_avx512(isa))
    return {&avx512::matmul_panel, &avx512::matmul_packed_cols, &avx512::matmul_packed, &avx512::matmul_panel_q8};
#endif
  (void)isa;
  return {&generic::matmul_panel, &generic::matmul_packed_cols, &generic::matmul_packed, &generic::matmul_panel_q8};
}

// Whether p takes the integer bodies (matmul_panel_q8): x quantised to
// q8_0, which goes with block-type weights only (ops.cpp checks).
bool integer_q8(const MatmulParams& p) { return p.x_dtype == DType::q8_0; }

// Panels as RedoJobs (cpu/thread_pool.h): a decode step's products on a
// shared machine. Beside one busy-looping process on 2 cores, the
// one-stream step of a Qwen2.5-0.5B-shaped checkpoint took 46.5-51.6 ms on
// 2 threads, slower than on one (44.6-47.0), because at the end of nearly
// every product the caller waited for a helper that had lost its core
// inside a panel; as RedoJobs, 37.6-39.7 ms, and with nothing else running
// alike (3 alternated rounds of `mstar-bench checkpoint --roofline 30
// --neighbours 1`). Every panel product given weights_outlive_call runs so
// (but those over x quantised to q8_0: redo, below), at any rows up to
// kPanelMaxRows: at 16 streams beside one busy loop the
// step on 2 threads took 94-116 ms as RedoJobs against 114-145 as ordinary
// jobs (1 thread: 113-123; 4 alternated rounds, bf16 activations), with
// f32 activations 154-171 against 187-206 (1 thread: 193-210; 3 rounds),
// and with nothing else running alike (`checkpoint --streams 16 --neighbours 1`).
//
// Where the bodies' copies of x start: at a 64-byte boundary, except for
// one row, 16 bytes past one. From malloc's 16-byte boundary every 64-byte
// load of a row straddled two cache lines, and at 16 rows, hot, on the
// Zen 5 machine aligned rows took 430-440 µs against 497-550
// (`mstar-bench matmul --rows 16 --cache hot`). A one-row product is bound by
// the read of its weights instead, and on Zen 4 the one-stream step
// measured faster with x off the boundary, though the product alone, hot,
// measured slower (one thread: 109 to 122 against 92 to 109 µs; the cause
// not found). With bf16 activations, where the read was 30 to 35 GB/s: on
// one thread 37.90 against 42.54 ms (8 alternated rounds), on two, with
// the copies below, 32.87 against 33.97 (10 rounds); with f32 activations
// on two, the allocator's placement against a 64-byte boundary, 33.61
// against 35.58 (10 rounds; `mstar-bench checkpoint --roofline 20`).
constexpr size_t kOneRowSkew = 16;

// The first of n elements of v, resized to hold them where x for `rows`
// rows starts (above).
template <class T>
T* placed_in(std::vector<T>& v, size_t n, int64_t rows) {
  const size_t skew = rows == 1 ? kOneRowSkew : 0;
  v.resize(n + (64 + skew) / sizeof(T));
  const auto misfit = static_cast<size_t>(reinterpret_cast<uintptr_t>(v.data()) % 64);
  return v.data() + ((misfit ? 64 - misfit : 0) + skew) / sizeof(T);
}

// One product's panels in such a job.
struct PanelProduct {
  MatmulParams p;                  // x: a copy in x_store (null for the pairs), y the caller's
  bool pairs = false;              // the avx512_bf16 bodies over xb, else the job's f32 bodies
  int64_t cols = 0, xs = 0;        // columns a panel; xb's row stride
  int64_t first = 0;               // the job's item that is its first panel
  const uint16_t* xb = nullptr;    // [rows, xs]: x rounded to bf16 (pairs), a copy in xb_store
  std::vector<float> x_store;      // holds p.x, [rows, in], placed as placed_in says
  std::vector<uint16_t> xb_store;  // holds xb, placed the same way
};

// The panels of up to kMatmulGroupMax products (matmul_group) as one job:
// item i is the panel i - first of the last product whose first is at most i.
struct PanelJob : RedoJob {
  Bodies b{};  // the f32 bodies
  PanelProduct product[kMatmulGroupMax];
  int count = 0;
  const PanelProduct& of(int64_t i) const {
    int k = count - 1;
    while (product[k].first > i) --k;
    return product[k];
  }
};

// A helper's panel outputs, [rows, cols], its own: written after the call
// has returned only when the caller ran that panel again.
thread_local std::vector<float> t_aside;

// The records: each product takes the first one no helper is inside. A
// helper that lost its core stays inside its record until it runs again,
// milliseconds, while the step goes on through dozens of products; taking
// records strictly in turn (8 of them) made the caller wait for such a
// helper at the reuse: the step beside one busy loop measured 45.2-49.3 ms
// against the prototype's 37.4-39.9 in the same rounds, and taking the
// next free record 39.4-40.5 against the committed pool's 46.3-47.9 in the
// rounds after (docs/bench/cpu/s22-redo-kept.md, batches B and C). Each
// record keeps the largest copies of x it has taken, so the first free
// one, not the next: the others grow only while a helper holds one. At 64
// streams of a Qwen2.5-0.5B-shaped checkpoint the process's peak resident
// memory went from 1,442 MB to 1,417 MB, the steps alike (`/usr/bin/time -f %M
// mstar-bench checkpoint QWEN --streams 64 --tokens 16`).
constexpr int kPanelJobs = 16;
std::mutex g_panels_mutex;  // one redo product at a time, and release_weights_cpu
PanelJob g_panels[kPanelJobs];
int g_next_panel = 0;  // the next in turn, when helpers are inside all of them

// The first record no helper is inside, or, when helpers are inside all of
// them, the next in turn (reuse() then waits).
PanelJob& free_panel_job() {
  for (PanelJob& j : g_panels)
    if (j.inside.load() == 0) return j;
  PanelJob& j = g_panels[g_next_panel];
  g_next_panel = (g_next_panel + 1) % kPanelJobs;
  return j;
}

// Panel t of product q, whose params are p (q.p, or its panel's columns
// alone as a product of their own: run_aside).
void panel_body(const PanelJob& j, const PanelProduct& q, const MatmulParams& p, int64_t t) {
  const int64_t o0 = t * q.cols, n = std::min(q.cols, p.out - o0);
#if defined(__x86_64__)
  if (q.pairs) return avx512_bf16::matmul_panel(p, q.xb, q.xs, o0, n);
#endif
  j.b.panel(p, o0, n);
}

// Takes a record for a job of panels: the first free one, emptied. Under
// g_panels_mutex.
PanelJob& start_panel_job(const Bodies& b) {
  PanelJob& j = free_panel_job();
  j.reuse();
  j.b = b;
  j.count = 0;
  j.n = 0;
  return j;
}

// Adds p's panels to the job, `cols` columns each. xb: x rounded (pairs)
// with row stride xs, or null for the f32 bodies.
void add_panels(PanelJob& j, const MatmulParams& p, const uint16_t* xb, int64_t xs, int64_t cols) {
  MSTAR_ASSERT(j.count < kMatmulGroupMax, "add_panels: at most kMatmulGroupMax products a job");
  PanelProduct& q = j.product[j.count++];
  q.p = p;
  q.pairs = xb != nullptr;
  q.cols = cols;
  q.xs = xs;
  q.first = j.n;
  if (xb) {
    // The pair bodies read xb alone: no copy of x (at 16 rows of 4,864, 311
    // KB a product).
    uint16_t* copy = placed_in(q.xb_store, static_cast<size_t>(p.rows * xs), p.rows);
    std::copy_n(xb, p.rows * xs, copy);
    q.xb = copy;
    q.p.x = nullptr;
  } else {
    float* copy = placed_in(q.x_store, static_cast<size_t>(p.rows * p.in), p.rows);
    for (int64_t r = 0; r < p.rows; ++r) std::copy_n(p.x + r * p.x_stride, p.in, copy + r * p.in);
    q.p.x = copy;
    q.xb = nullptr;
  }
  q.p.x_stride = p.in;
  j.n += (p.out + cols - 1) / cols;
}

// Runs the job's panels on the pool.
void run_panels(PanelJob& j, int threads) {
  j.run = [](RedoJob& r, int64_t i) {
    const auto& pj = static_cast<const PanelJob&>(r);
    const PanelProduct& q = pj.of(i);
    panel_body(pj, q, q.p, i - q.first);
  };
  j.run_aside = [](RedoJob& r, int64_t i) {
    const auto& pj = static_cast<const PanelJob&>(r);
    const PanelProduct& q = pj.of(i);
    // The panel's columns as a product of their own, into t_aside.
    MatmulParams a = q.p;
    const int64_t o0 = (i - q.first) * q.cols, n = std::min(q.cols, a.out - o0);
    a.w = static_cast<const char*>(a.w) + static_cast<int64_t>(row_bytes(a.w_dtype, o0 * a.in));
    if (a.bias) a.bias += o0;
    a.out = n;
    t_aside.resize(static_cast<size_t>(a.rows * q.cols));
    a.y = t_aside.data();
    a.y_stride = q.cols;
    a.accumulate = false;  // bias included; publish adds y when accumulating
    panel_body(pj, q, a, 0);
  };
  j.publish = [](RedoJob& r, int64_t i) {
    const auto& pj = static_cast<const PanelJob&>(r);
    const PanelProduct& q = pj.of(i);
    const int64_t o0 = (i - q.first) * q.cols, n = std::min(q.cols, q.p.out - o0);
    for (int64_t row = 0; row < q.p.rows; ++row) {
      const float* a = t_aside.data() + row * q.cols;
      float* y = q.p.y + row * q.p.y_stride + o0;
      // As the bodies store: y + s when accumulating, else s.
      for (int64_t c = 0; c < n; ++c) y[c] = q.p.accumulate ? y[c] + a[c] : a[c];
    }
  };
  parallel_for_redo(threads, j);
}

// The panels of p through a RedoJob. xb: x rounded (pairs) with row stride
// xs, or null for the f32 bodies b.
void redo_panels(const MatmulParams& p, const Bodies& b, const uint16_t* xb, int64_t xs, int64_t cols) {
  std::lock_guard lk(g_panels_mutex);
  PanelJob& j = start_panel_job(b);
  add_panels(j, p, xb, xs, cols);
  run_panels(j, p.threads);
}

// Whether p takes the avx512_bf16 pair bodies (matmul_cpu_path sends it there).
bool takes_pairs(const MatmulParams& p, CpuIsa isa) {
#if defined(__x86_64__)
  return p.x_dtype == DType::bf16 && p.w_dtype == DType::bf16 && has_bf16_pairs(isa);
#else
  (void)p, (void)isa;
  return false;
#endif
}

// x rounded to bf16 and widened back (activations_as_read), [rows, in], for
// the f32 bodies (any instruction set: the same product as the bf16 pair
// bodies compute), kept between calls.
const float* rounded_f32(const MatmulParams& p) {
  thread_local std::vector<float> xr;
  xr.resize(static_cast<size_t>(p.rows * p.in));
  float* out = xr.data();
  parallel_for(p.threads, p.rows, [&](int64_t r, int) { activations_as_read(p, r, out + r * p.in); });
  return out;
}

// x quantised to q8_0 (xq: [rows, in / 32] blocks) and each block's
// d * sum(codes) (xsum: [rows, in / 32]), kept between calls; in the
// caller's thread up to the panels' rows, as rounded_bf16.
struct QuantisedX {
  const unsigned char* xq;
  const float* xsum;
};
QuantisedX quantised_q8_0(const MatmulParams& p) {
  thread_local std::vector<unsigned char> xq;
  thread_local std::vector<float> xsum;
  const int64_t blocks = p.in / 32, row = static_cast<int64_t>(row_bytes(DType::q8_0, p.in));
  xq.resize(static_cast<size_t>(p.rows * row));
  xsum.resize(static_cast<size_t>(p.rows * blocks));
  // The pool's threads name their own vectors: they get these pointers.
  unsigned char* q = xq.data();
  float* sums = xsum.data();
  auto one = [&](int64_t r, int) {
    unsigned char* b = q + r * row;
    q8_0_from_f32(p.x + r * p.x_stride, b, p.in);
    for (int64_t k = 0; k < blocks; ++k, b += 34) {
      int32_t s = 0;
      for (int i = 0; i < 32; ++i) s += static_cast<signed char>(b[2 + i]);
      sums[r * blocks + k] = f16_to_f32(static_cast<uint16_t>(b[0] | b[1] << 8)) * static_cast<float>(s);
    }
  };
  if (p.rows <= kPanelMaxRows)
    for (int64_t r = 0; r < p.rows; ++r) one(r, 0);
  else
    parallel_for(p.threads, p.rows, one);
  return {q, sums};
}

// Panels as a redo job: a decode step's products (few rows; the pair
// panels' bodies take any number, and a prefill's many would be copied).
// Not the integer bodies: a job's records carry x as floats or bf16, not
// quantised, so those products run as ordinary jobs, each quantising its
// x (q, k and v the same x three times); not measured beside a busy
// process.
bool redo(const MatmulParams& p, int64_t cols) {
  return !integer_q8(p) && p.weights_outlive_call && p.threads > 1 && p.rows <= kPanelMaxRows &&
         (p.out + cols - 1) / cols <= RedoJob::kMaxItems;
}

#if defined(__x86_64__)
// x rounded to bf16, [rows, stride] with stride >= in, the pad zero, and
// rows >= p.rows, the extra rows zero (what the avx512_bf16 and amx_bf16
// bodies read), kept between calls, placed as placed_in says. In the
// caller's thread up to the panels' rows: a decode step's few rows round in
// microseconds, less than handing them to the pool.
const uint16_t* rounded_bf16(const MatmulParams& p, int64_t stride, int64_t rows) {
  MSTAR_ASSERT(stride >= p.in && rows >= p.rows, "rounded_bf16: padding only adds");
  thread_local std::vector<uint16_t> xb;
  uint16_t* out = placed_in(xb, static_cast<size_t>(rows * stride), rows);
  std::fill(out + p.rows * stride, out + rows * stride, uint16_t{0});
  auto row = [&](int64_t r, int) {
    avx512_bf16::round_to_bf16(p.x + r * p.x_stride, p.in, out + r * stride);
    std::fill(out + r * stride + p.in, out + (r + 1) * stride, uint16_t{0});
  };
  if (p.rows <= kPanelMaxRows)
    for (int64_t r = 0; r < p.rows; ++r) row(r, 0);
  else
    parallel_for(p.threads, p.rows, row);
  return out;
}

// The amx_bf16 bodies over x rounded: rows and k padded to whole tiles.
void matmul_bf16_tiles(const MatmulParams& p) {
  const int64_t K = amx_bf16::kTileK, xs = (p.in + K - 1) / K * K;
  const int64_t rows = (p.rows + 15) / 16 * 16;
  const uint16_t* xb = rounded_bf16(p, xs, rows);
  const int64_t cols = amx_bf16::matmul_tile_cols();
  if (p.in % K == 0) {
    // x packed once, 32 rows a group, for the direct body's tasks; only a
    // last task of under 32 columns takes the packing body.
    const int64_t groups = (rows + cols - 1) / cols, pairs = p.in / 2;
    thread_local std::vector<uint32_t> xv_buf;  // [groups, pairs, 32], kept between calls
    xv_buf.resize(static_cast<size_t>(groups * pairs * cols));
    uint32_t* xv = xv_buf.data();  // the pool's threads name their own xv_buf: they get this pointer
    MatmulParams xp = p;            // x's rows as the "weights" pack reads
    xp.w = xb, xp.out = rows, xp.w_layout = WeightLayout::rows;
    parallel_for(p.threads, groups, [&](int64_t g, int) {
      avx512_bf16::pack(xp, g * cols, std::min(cols, rows - g * cols), pairs, xv + g * pairs * cols);
    });
    const int64_t whole = p.out / cols;
    parallel_for(p.threads, (p.out + cols - 1) / cols, [&](int64_t t, int) {
      if (t < whole) return amx_bf16::matmul_tiles_direct(p, xv, t * cols);
      thread_local std::vector<uint32_t> packed;  // [xs / 2, cols] pairs, kept between calls
      packed.resize(static_cast<size_t>(xs / 2 * cols));
      amx_bf16::matmul_tiles(p, xb, xs, t * cols, p.out - t * cols, packed.data());
    });
    return;
  }
  parallel_for(p.threads, (p.out + cols - 1) / cols, [&](int64_t t, int) {
    thread_local std::vector<uint32_t> packed;  // [xs / 2, cols] pairs, kept between calls
    packed.resize(static_cast<size_t>(xs / 2 * cols));
    const int64_t o0 = t * cols;
    amx_bf16::matmul_tiles(p, xb, xs, o0, std::min(cols, p.out - o0), packed.data());
  });
}

// The avx512_bf16 bodies over x rounded, for one row (one stream's decode
// step) too: with both one-row bodies reading a panel as one stream
// (row_stream), the pairs measured faster than the f32 panels over x
// rounded (the same product), which had been the faster with 4 x 1 tiles
// for rows of weights up to 1,536. The
// Qwen2.5-0.5B-shaped one-stream step on Zen 4 took 18.87 against 19.73 ms
// where the read was 45 GB/s or more, 28.86 against 29.05 at 35 to 40 (16
// alternated rounds of `mstar-bench checkpoint --roofline 20`).
void matmul_bf16_pairs(const MatmulParams& p, MatmulPath path) {
  const int64_t xs = (p.in + 1) / 2 * 2;
  const uint16_t* xb = rounded_bf16(p, xs, p.rows);
  if (path == MatmulPath::packed) {
    const int64_t cols = avx512_bf16::matmul_packed_cols();
    parallel_for(p.threads, (p.out + cols - 1) / cols, [&](int64_t t, int) {
      thread_local std::vector<uint32_t> packed;  // [(in + 1) / 2, cols] pairs, kept between calls
      packed.resize(static_cast<size_t>(xs / 2 * cols));
      const int64_t o0 = t * cols;
      avx512_bf16::matmul_packed(p, xb, xs, o0, std::min(cols, p.out - o0), packed.data());
    });
    return;
  }
  const int64_t cols = avx512_bf16::matmul_panel_cols(p);
  if (redo(p, cols)) return redo_panels(p, Bodies{}, xb, xs, cols);
  parallel_for(p.threads, (p.out + cols - 1) / cols, [&](int64_t t, int) {
    const int64_t o0 = t * cols;
    avx512_bf16::matmul_panel(p, xb, xs, o0, std::min(cols, p.out - o0));
  });
}
#endif

}  // namespace

void matmul_cpu(const MatmulParams& p) {
  const CpuIsa isa = best_cpu_isa();
  matmul_cpu_path(p, isa, matmul_path(p, isa));
}

void matmul_cpu_path(const MatmulParams& p, CpuIsa isa, MatmulPath path) {
  MSTAR_ASSERT(cpu_supports(isa), "matmul_cpu_path: this processor lacks the instruction set");
  MSTAR_ASSERT(op_table(Backend::cpu, "matmul").takes_weights(p.w_dtype), "matmul_cpu_path: weights of a type it takes");
  // Block types have one path, the panels (matmul_cpu_impl.inc): block_panel,
  // or matmul_panel_q8 with x quantised.
  if (!is_element_type(p.w_dtype)) path = MatmulPath::panels;
  MSTAR_ASSERT(p.x_dtype == DType::f32 || p.x_dtype == DType::bf16 || p.x_dtype == DType::q8_0,
               "matmul_cpu_path: activations are f32, bf16 or q8_0");
  MSTAR_ASSERT(p.x_dtype != DType::q8_0 || !is_element_type(p.w_dtype), "matmul_cpu_path: q8_0 x with block types");
  // Tiles are AMX on bf16 x bf16; asked of anything else, the packed path.
  const bool amx = isa == CpuIsa::amx_bf16 && p.x_dtype == DType::bf16 && p.w_dtype == DType::bf16;
  if (path == MatmulPath::tiles && !amx) path = MatmulPath::packed;
  // Pair panels are what the packed path would pack: their panel bodies take any rows.
  if (p.w_layout == WeightLayout::pair_panels) path = MatmulPath::panels;
  const Bodies b = bodies(isa);
  if (integer_q8(p)) {
    const QuantisedX x = quantised_q8_0(p);
    parallel_for(p.threads, (p.out + kPanelCols - 1) / kPanelCols, [&](int64_t t, int) {
      const int64_t o0 = t * kPanelCols;
      b.panel_q8(p, x.xq, x.xsum, o0, std::min(kPanelCols, p.out - o0));
    });
    return;
  }
  if (p.x_dtype == DType::bf16) {
#if defined(__x86_64__)
    if (path == MatmulPath::tiles) return matmul_bf16_tiles(p);
    if (takes_pairs(p, isa)) return matmul_bf16_pairs(p, path);
#endif
    MatmulParams q = p;
    q.x = rounded_f32(p);
    q.x_stride = p.in;
    q.x_dtype = DType::f32;
    return matmul_cpu_path(q, isa, path);
  }
  if (path == MatmulPath::packed) {
    const int64_t cols = b.packed_cols();
    parallel_for(p.threads, (p.out + cols - 1) / cols, [&](int64_t t, int) {
      thread_local std::vector<float> packed;  // [in, cols], kept between calls
      packed.resize(static_cast<size_t>(p.in * cols));
      const int64_t o0 = t * cols;
      b.packed(p, o0, std::min(cols, p.out - o0), packed.data());
    });
    return;
  }
  if (redo(p, kPanelCols)) return redo_panels(p, b, nullptr, 0, kPanelCols);
  // One row over rows of weights reads x from a copy placed as placed_in
  // says, as a redo job's is (the trunk's activations start at a 64-byte
  // boundary). On Zen 4 the one-thread step with f32 activations measured
  // 46.76 against 52.39 ms where the read was 30 to 35 GB/s and 53.69
  // against 60.06 under 30, alike above 45 (14 alternated rounds;
  // `mstar-bench checkpoint --roofline 20`). Not measured on other
  // processors, nor for pair panels, which broadcast x 4 bytes at a time
  // and read it where it lies.
  MatmulParams q = p;
  if (p.rows == 1 && p.w_layout == WeightLayout::rows) {
    thread_local std::vector<float> x1;
    float* copy = placed_in(x1, static_cast<size_t>(p.in), 1);
    std::copy_n(p.x, p.in, copy);
    q.x = copy;
  }
  parallel_for(p.threads, (p.out + kPanelCols - 1) / kPanelCols, [&](int64_t t, int) {
    const int64_t o0 = t * kPanelCols;
    b.panel(q, o0, std::min(kPanelCols, p.out - o0));
  });
}

namespace {

// The columns of p's panels where matmul_cpu would run them as a redo job,
// else 0.
int64_t redo_cols(const MatmulParams& p, CpuIsa isa) {
  if (matmul_path(p, isa) != MatmulPath::panels) return 0;
#if defined(__x86_64__)
  const int64_t cols = takes_pairs(p, isa) ? avx512_bf16::matmul_panel_cols(p) : kPanelCols;
#else
  const int64_t cols = kPanelCols;
#endif
  return redo(p, cols) ? cols : 0;
}

}  // namespace

// Products that would each run their panels as a redo job run them as one:
// every job's start and end cost the step a little (the helper enters, each
// thread starts a new stream of weights, the last panels keep one thread
// waiting for the other), and k and v are two panels each. With q, k, v and
// gate, up grouped (72 jobs fewer a step), the Qwen2.5-0.5B-shaped
// one-stream step on Zen 4 took 20.38 against 20.75 ms where the read
// measured just before was 45 GB/s or more (168 and 210 pairs), and alike
// at 30 to 40 GB/s (bf16 activations, 42 alternated rounds;
// `mstar-bench checkpoint --roofline 20`): a small gain, where a step
// is shortest.
void matmul_group_cpu(const MatmulParams* ps, int n) {
  MSTAR_ASSERT(n >= 0 && n <= kMatmulGroupMax, "matmul_group_cpu: at most kMatmulGroupMax products");
  const CpuIsa isa = best_cpu_isa();
  int64_t cols[kMatmulGroupMax];  // each product's panel columns
  bool one_job = n > 1;
  int64_t items = 0;
  for (int i = 0; i < n && one_job; ++i) {
    cols[i] = redo_cols(ps[i], isa);
    one_job = cols[i] > 0 && ps[i].threads == ps[0].threads;
    if (one_job) items += (ps[i].out + cols[i] - 1) / cols[i];
  }
  if (!one_job || items > RedoJob::kMaxItems) {
    for (int i = 0; i < n; ++i) matmul_cpu(ps[i]);
    return;
  }
  std::lock_guard lk(g_panels_mutex);
  PanelJob& j = start_panel_job(bodies(isa));
  for (int i = 0; i < n; ++i) {
    const MatmulParams& p = ps[i];
#if defined(__x86_64__)
    if (takes_pairs(p, isa)) {
      const int64_t xs = (p.in + 1) / 2 * 2;
      add_panels(j, p, rounded_bf16(p, xs, p.rows), xs, cols[i]);  // copied before the next rounding
      continue;
    }
#endif
    if (p.x_dtype == DType::bf16) {
      MatmulParams q = p;  // as matmul_cpu_path: the f32 bodies over x rounded
      q.x = rounded_f32(p);
      q.x_stride = p.in;
      q.x_dtype = DType::f32;
      add_panels(j, q, nullptr, 0, cols[i]);
      continue;
    }
    add_panels(j, p, nullptr, 0, cols[i]);
  }
  run_panels(j, ps[0].threads);
}

void release_weights_cpu() {
  std::lock_guard lk(g_panels_mutex);
  for (PanelJob& j : g_panels) j.reuse();
}

}  // namespace mstar::kernels
