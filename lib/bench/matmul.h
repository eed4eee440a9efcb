#pragma once
// The matrix product at the trunk's shapes, by each way the cpu backend can
// compute it, so the choice between them (matmul_cpu.h) rests on figures
// anyone can rerun: the engine's own choice (with f32 and with bf16
// activations), each of its paths forced (the AMX tiles with bf16
// activations only), and the maintained alternative, OpenBLAS sgemm with its own threads, given
// its best case: the weights widened to f32 beforehand (twice the memory of
// bf16, not timed). OpenBLAS's bf16 product (sbgemm) would be the closer
// match, but Debian 12's OpenBLAS 0.3.21 is built without it (libopenblas.so
// exports no sbgemm).
#include <cstdint>
#include <string>
#include <vector>

#include "core/dtype.h"
#include "kernels/cpu/peak_cpu.h"

namespace mstar::bench {

struct MatmulShape {
  int64_t rows = 1, in = 896, out = 4864;
  DType dtype = DType::bf16;  // the weights'
  int threads = 2;
};

struct MatmulResult {
  // mstar | panels | packed | openblas-sgemm-f32, the first three with
  // activations rounded to bf16 (MatmulParams::x_dtype): mstar-bf16-act ...,
  // and tiles-bf16-act (AMX; elsewhere the packed path again); with block
  // weights mstar-q8-act, activations quantised to q8_0
  std::string method;
  MatmulShape shape;
  bool cold = false;
  double median_us = 0, min_us = 0;
  double weight_gbs = 0;  // weight bytes / median
  double gflops = 0;      // 2 * rows * in * out / median
  // The instruction whose peak its GFLOP/s is set beside: vdpbf16ps for bf16
  // weights and activations on AVX512_BF16, tdpbf16ps where those took AMX
  // tiles, else the FMA.
  kernels::PeakOp peak_op = kernels::PeakOp::fma;
};

// Every method bench_matmul knows, in the order it times them. The
// pair-panels ones (the weights as pair panels, weight_layout.h, as the
// products of a checkpoint's trunk read them where kernels::matmul_layout
// says so) time only bf16 weights with an even width.
const std::vector<std::string>& matmul_methods();

// Throws ConfigError naming the shape when a size is below 1 or past
// int32, or when what bench_matmul would allocate for it does not fit in
// this machine's memory (checked before anything is allocated).
void check_matmul_shape(const MatmulShape& s, bool cold, int64_t llc_bytes, const std::vector<std::string>& methods);

// Hot: the same weights every call. Cold: copies of the weights several
// times the last-level cache, a different one every call (as a decode step
// reads each layer's weights once). `methods`: which of matmul_methods(),
// timed in that order.
std::vector<MatmulResult> bench_matmul(const MatmulShape& s, bool cold, int repeats, int64_t llc_bytes,
                                       const std::vector<std::string>& methods);

}  // namespace mstar::bench
