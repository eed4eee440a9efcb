#include "bench/matmul.h"

#include <cblas.h>

#include <fmt/format.h>

#include <algorithm>
#include <random>

#include "bench/timing.h"
#include "core/buffer.h"
#include "core/checked.h"
#include "core/errors.h"
#include "kernels/cpu/matmul_cpu.h"
#include "kernels/ops.h"
#include "resources/options.h"

namespace mstar::bench {

const std::vector<std::string>& matmul_methods() {
  static const std::vector<std::string> all{"mstar",          "panels",          "packed",
                                            "mstar-bf16-act", "panels-bf16-act", "packed-bf16-act",
                                            "tiles-bf16-act", "pair-panels",     "pair-panels-bf16-act",
                                            "mstar-q8-act",   "openblas-sgemm-f32"};
  return all;
}

namespace {

// Cold calls rotate over copies of the weights, together at least four
// times the last-level cache.
int64_t weight_copies(const MatmulShape& s, bool cold, int64_t llc_bytes) {
  const auto wbytes = static_cast<int64_t>(row_bytes(s.dtype, s.in * s.out));
  return cold ? std::max<int64_t>(2, (4 * llc_bytes + wbytes - 1) / wbytes) : 1;
}

bool times_openblas(const std::vector<std::string>& methods) {
  return std::find(methods.begin(), methods.end(), "openblas-sgemm-f32") != methods.end();
}

}  // namespace

void check_matmul_shape(const MatmulShape& s, bool cold, int64_t llc_bytes, const std::vector<std::string>& methods) {
  const std::string shape = fmt::format("--rows {}, --in {}, --out {}, --threads {}, {} weights{}", s.rows, s.in, s.out,
                                        s.threads, to_string(s.dtype), cold ? ", cold" : "");
  for (auto [name, v] : {std::pair<const char*, int64_t>{"--rows", s.rows}, {"--in", s.in}, {"--out", s.out},
                         {"--threads", s.threads}})
    if (v < 1) throw ConfigError(fmt::format("{} must be at least 1, got {}", name, v));
  // OpenBLAS takes every size as an int.
  if (s.rows > INT32_MAX || s.in > INT32_MAX || s.out > INT32_MAX)
    throw ConfigError(fmt::format("{}: a size passes int32", shape));
  if (!fits_blocks(s.dtype, s.in))
    throw ConfigError(fmt::format("{}: {} weights come in blocks of {}, which do not divide --in", shape,
                                  to_string(s.dtype), dtype_traits(s.dtype).block));
  // What bench_matmul allocates, before allocating it: the weights' copies
  // (and their f32 widening when OpenBLAS is timed), x, y and x rounded in
  // f32, and each thread's packed block (no path's task is wider than
  // kernels::kPanelCols columns).
  const auto row = static_cast<int64_t>(row_bytes(s.dtype, s.in));  // bytes of one weight row
  const int64_t wide = times_openblas(methods) ? 4 * s.in : 0;
  uint64_t bytes = UINT64_MAX;
  if (checked_product({s.out, row}, uint64_t{1} << 62)) {  // weight_copies' arithmetic fits
    const auto w = checked_product({s.out, weight_copies(s, cold, llc_bytes), row + wide});
    const auto x = checked_product({s.rows, 2 * s.in + s.out, 4});
    const auto packed = checked_product({s.threads, s.in, kernels::kPanelCols, 4});
    if (w && x && packed && *w <= UINT64_MAX - *x && *w + *x <= UINT64_MAX - *packed) bytes = *w + *x + *packed;
  }
  check_fits_memory(shape, bytes, Backend::cpu);
}

std::vector<MatmulResult> bench_matmul(const MatmulShape& s, bool cold, int repeats, int64_t llc_bytes,
                                       const std::vector<std::string>& methods) {
  for (const std::string& m : methods)
    MSTAR_ASSERT(std::find(matmul_methods().begin(), matmul_methods().end(), m) != matmul_methods().end(),
                 "bench_matmul: an unknown method");
  check_matmul_shape(s, cold, llc_bytes, methods);
  const auto wbytes = static_cast<int64_t>(row_bytes(s.dtype, s.in * s.out));
  const int64_t copies = weight_copies(s, cold, llc_bytes);
  std::mt19937_64 g(7);
  std::normal_distribution<float> n;
  // Host memory as the engine's weights have it (2 MiB pages for large blocks).
  HostBuffer weights(s.dtype, Shape{copies * s.in * s.out});
  // The products are given weights_outlive_call, as the trunk gives them
  // (decode products then run as the step runs them: cpu/matmul_cpu.cpp),
  // so a pool helper may still read a copy after its call has returned;
  // release_weights waits for it before the copies are rearranged and,
  // here, before they are freed.
  const kernels::WeightsRelease release{Backend::cpu};
  const auto count = static_cast<size_t>(copies * s.in * s.out);
  std::vector<float> block(4099);  // repeated: fills GiBs fast; odd so rows differ
  for (auto& v : block) v = n(g);
  // Filled through f32 a run at a time, so a block type holds what its
  // quantiser makes of the values.
  std::vector<float> run(std::size_t{1} << 15);  // a multiple of every block
  for (size_t at = 0; at < count; at += run.size()) {
    const size_t len = std::min(run.size(), count - at);
    for (size_t i = 0; i < len; ++i) run[i] = block[(at + i) % block.size()];
    convert(run.data(), DType::f32, static_cast<unsigned char*>(weights.data()) + row_bytes(s.dtype, static_cast<int64_t>(at)),
            s.dtype, static_cast<int64_t>(len));
  }
  // Activations from the engine's allocator too: 64-byte aligned, so two
  // threads writing neighbouring column panels never share a cache line
  // (from std::vector's 16-byte boundary they did at every panel edge).
  HostBuffer xb(DType::f32, Shape{s.rows, s.in}), yb(DType::f32, Shape{s.rows, s.out});
  float* x = static_cast<float*>(xb.data());
  float* y = static_cast<float*>(yb.data());
  for (int64_t i = 0; i < s.rows * s.in; ++i) x[i] = n(g);

  kernels::MatmulParams p;
  p.rows = s.rows, p.in = s.in, p.out = s.out;
  p.x = x, p.x_stride = s.in;
  p.w_dtype = s.dtype;
  p.y = y, p.y_stride = s.out;
  p.threads = s.threads;
  p.weights_outlive_call = true;
  int64_t copy = 0;  // the weights of this call
  const auto next_copy = [&](int i) {
    copy = i % copies;
    p.w = static_cast<const unsigned char*>(weights.data()) + copy * wbytes;
  };

  // OpenBLAS's operand: the weights as f32, one copy per cold copy (only
  // when it is timed: at the logits' shape that is GiBs).
  std::vector<float> wide;
  if (times_openblas(methods)) {
    wide.resize(count);
    convert(weights.data(), s.dtype, wide.data(), DType::f32, static_cast<int64_t>(count));
  }
  const int64_t wide_floats = s.in * s.out;

  // The copies' layout: the pair-panels methods rearrange them in place.
  kernels::WeightLayout layout = kernels::WeightLayout::rows;
  std::vector<MatmulResult> out;
  for (const std::string& m : methods) {
    const kernels::CpuIsa isa = kernels::best_cpu_isa();
    const bool blas = m == "openblas-sgemm-f32";
    const kernels::WeightLayout want =
        m.starts_with("pair-panels") ? kernels::WeightLayout::pair_panels : kernels::WeightLayout::rows;
    if (!kernels::layout_fits(want, s.dtype, s.in)) continue;  // pair panels: bf16 with an even --in only
    // Block types take the panels at any rows (block_panel): no packed or tiles path.
    if (!is_element_type(s.dtype) && (m.starts_with("packed") || m.starts_with("tiles"))) continue;
    // x quantised to q8_0 goes with block types only (ggml's integer dot products).
    if (is_element_type(s.dtype) && m.ends_with("-q8-act")) continue;
    if (want != layout && !blas) {
      kernels::release_weights(Backend::cpu);
      for (int64_t c = 0; c < copies; ++c) {
        auto* w = static_cast<uint16_t*>(weights.data()) + c * s.in * s.out;
        if (want == kernels::WeightLayout::pair_panels)
          kernels::rows_to_pair_panels(w, s.out, s.in);
        else
          kernels::pair_panels_to_rows(w, s.out, s.in);
        layout = want;
      }
    }
    p.w_layout = blas ? kernels::WeightLayout::rows : layout;
    const DType x_dtype = m.ends_with("-bf16-act") ? DType::bf16 : m.ends_with("-q8-act") ? DType::q8_0 : DType::f32;
    if (blas) openblas_set_num_threads(s.threads);
    const std::vector<double> us = time_calls(
        Backend::cpu, next_copy,
        [&](int) {
          kernels::MatmulParams q = p;  // p.w: this call's copy
          q.x_dtype = x_dtype;
          if (blas)
            cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, static_cast<int>(s.rows), static_cast<int>(s.out),
                        static_cast<int>(s.in), 1.0f, x, static_cast<int>(s.in), wide.data() + copy * wide_floats,
                        static_cast<int>(s.in), 0.0f, y, static_cast<int>(s.out));
          else if (m.starts_with("mstar") || m.starts_with("pair-panels")) kernels::matmul_cpu(q);
          else if (m.starts_with("panels")) kernels::matmul_cpu_path(q, isa, kernels::MatmulPath::panels);
          else if (m.starts_with("tiles")) kernels::matmul_cpu_path(q, isa, kernels::MatmulPath::tiles);
          else kernels::matmul_cpu_path(q, isa, kernels::MatmulPath::packed);
        },
        repeats);
    if (blas) openblas_set_num_threads(1);
    MatmulResult r{m, s, cold, us[us.size() / 2], us.front(), 0, 0};
    const bool pairs = !blas && x_dtype == DType::bf16 && s.dtype == DType::bf16 && kernels::has_bf16_pairs(isa);
    // The path each method took (matmul_cpu.h): "mstar" chooses by rows.
    kernels::MatmulParams q = p;
    q.x_dtype = x_dtype;
    const bool tiles =
        m.starts_with("tiles") || (m.starts_with("mstar") && kernels::matmul_path(q, isa) == kernels::MatmulPath::tiles);
    if (pairs) r.peak_op = tiles && isa == kernels::CpuIsa::amx_bf16 ? kernels::PeakOp::tiles : kernels::PeakOp::bf16_dot;
    r.weight_gbs = static_cast<double>(wbytes) / (r.median_us * 1e-6) / 1e9;
    r.gflops = 2.0 * static_cast<double>(s.rows * s.in * s.out) / (r.median_us * 1e-6) / 1e9;
    out.push_back(r);
  }
  return out;
}

}  // namespace mstar::bench
