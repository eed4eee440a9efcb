#pragma once
// The decoder trunk's ops, device-neutral: the models call these on buffers
// of the backend they run on, so the same model code runs on the host
// (reference, cpu) and on a device (cuda). Activations are f32; weights are
// read in the dtype they are stored in. Each op checks its scalars and
// dispatches (ops.cpp); backends: reference/ops_reference.cpp (plain loops in
// double), cpu/ops_cpu.cpp, cuda/.
#include <cstdint>

#include "backend.h"
#include "core/dtype.h"
#include "weight_layout.h"

namespace mstar::kernels {

// y[rows, out] = x[rows, in] . w[out, in]^T (+ bias[out]) (+ y when accumulate).
// x_dtype bf16: x is rounded to bf16 (nearest even) first, and the product is
// that of the rounded values (within f32 summation error): half the
// arithmetic's cost on processors with bf16 dot products, at about three
// significant digits of the activations.
// x_dtype q8_0, for weights of a block type only: each row of x is
// quantised in blocks of 32 to ggml's q8_0 (q8_0_from_f32: an f16 scale of
// max |x| / 127 and 32 int8 codes, round half away from zero) first, and the
// product is that of the dequantised values (activations_as_read): what
// ggml's integer dot products multiply, so the cpu backend sums int8 x int8
// products per block (docs/gguf.md says what it costs in accuracy).
struct MatmulParams {
  int64_t rows = 0, in = 0, out = 0;
  const float* x = nullptr;  // [rows, x_stride]
  int64_t x_stride = 0;
  DType x_dtype = DType::f32;  // f32, bf16, or q8_0 with block-type weights
  const void* w = nullptr;  // [out, in], w_dtype, laid out as w_layout says
  DType w_dtype = DType::f32;
  WeightLayout w_layout = WeightLayout::rows;  // pair_panels: bf16, in even, on the host backends
  const float* bias = nullptr;  // [out] or null
  float* y = nullptr;           // [rows, y_stride]
  int64_t y_stride = 0;
  bool accumulate = false;
  int threads = 1;
  // w and bias stay valid until release_weights(backend) returns: the cpu
  // backend may then leave a panel a helper holds to that helper, which
  // lost its core, run it again and return before the helper is done with
  // it (cpu/thread_pool.h, RedoJob). The models' trunks give this.
  bool weights_outlive_call = false;
};

// out[r] = x[r] / sqrt(mean(x[r]^2) + eps) * w.
struct RmsNormParams {
  int64_t rows = 0, width = 0;
  const float* x = nullptr;  // [rows, width]
  const float* w = nullptr;  // [width]
  double eps = 1e-6;
  float* out = nullptr;  // [rows, width]; may be x
  int threads = 1;
};

// out[r] = (x[r] - mean(x[r])) / sqrt(var(x[r]) + eps) * w + bias, the
// variance the population one (divided by width); w and bias optional (null:
// 1 and 0), as LayerNorm with and without its affine parameters.
struct LayerNormParams {
  int64_t rows = 0, width = 0;
  const float* x = nullptr;     // [rows, width]
  const float* w = nullptr;     // [width] or null
  const float* bias = nullptr;  // [width] or null
  double eps = 1e-5;
  float* out = nullptr;  // [rows, width]; may be x
  int threads = 1;
};

// The activations a feed-forward block applies.
enum class Activation : unsigned char {
  silu,       // x * sigmoid(x)
  gelu,       // x * Phi(x), the exact (erf) form
  gelu_tanh,  // 0.5 x (1 + tanh(sqrt(2 / pi) (x + 0.044715 x^3)))
};
const char* activation_name(Activation a);  // "silu", "gelu", "gelu_tanh"

// a = act(a) * b over n entries (a gated feed-forward), or a = act(a)
// where b is null (a plain one).
struct ActivateParams {
  int64_t n = 0;
  float* a = nullptr;
  const float* b = nullptr;
  Activation act = Activation::silu;
  int threads = 1;
};

// a = silu(a) * b over n entries.
struct SiluMulParams {
  int64_t n = 0;
  float* a = nullptr;
  const float* b = nullptr;
  int threads = 1;
};

// Rotary embedding of every head of every token, in the "rotate half" form
// (pairs (i, i + D/2), the one convention in mstar, see rope.h): up to three
// sections of pairs (time, height, width for a 3-D rotary split; one section
// for a sequence), each with its own positions and inverse frequencies.
struct RopeSection {
  int32_t offset = 0;  // first pair of the section
  int32_t count = 0;   // pairs in the section
  const float* inv_freq = nullptr;  // [count]
};
struct RopeParams {
  int64_t tokens = 0;
  int32_t heads = 0, head_dim = 0;
  float* x = nullptr;  // [tokens, heads, head_dim] at the strides below
  int64_t token_stride = 0, head_stride = 0;
  int32_t sections = 1;
  RopeSection section[3];
  const int64_t* positions = nullptr;  // [tokens, sections]
  int threads = 1;
};

// out[t] = table[ids[t]] as f32.
struct EmbedParams {
  int64_t tokens = 0, width = 0;
  const int32_t* ids = nullptr;  // [tokens], each in [0, vocab)
  const void* table = nullptr;   // [vocab, width], dtype, laid out as `layout` says
  DType dtype = DType::f32;
  float* out = nullptr;  // [tokens, width]
  WeightLayout layout = WeightLayout::rows;  // pair_panels (the logits' table too): host backends
  int64_t vocab = 0;                         // the table's rows (pair_panels' panels need it)
};

// out[i] = x[index[i]] for i < rows (picking each row's last token, say).
struct GatherRowsParams {
  int64_t rows = 0, width = 0;
  const int32_t* index = nullptr;  // [rows]
  const float* x = nullptr;        // [*, width]
  float* out = nullptr;            // [rows, width]
};

// x[r] += y[r / group] for r < rows: a per-frame vector added to each of its
// tokens (group = tokens per frame), or one vector to every row (group = rows).
struct AddRowsParams {
  int64_t rows = 0, width = 0, group = 1;
  float* x = nullptr;        // [rows, width]
  const float* y = nullptr;  // [ceil(rows / group), width]
};

// x += s * (y - x) over n entries (an Euler step toward y).
struct LerpParams {
  int64_t n = 0;
  float* x = nullptr;
  const float* y = nullptr;
  float s = 0.0f;
};

void matmul(Backend b, const MatmulParams& p);
// Row r of p's x as the product reads it ([p.in] into out): rounded to
// x_dtype and widened back to f32, by blocks of 32 for q8_0.
void activations_as_read(const MatmulParams& p, int64_t r, float* out);
// The products ps[0 .. n), each as matmul() computes it (the same bits), in
// one call, so that a backend may share them out as one job: a decode
// step's q, k and v (one x, three weights), or gate and up. No product's y
// may overlap another's x or y. At most kMatmulGroupMax products.
constexpr int kMatmulGroupMax = 4;
void matmul_group(Backend b, const MatmulParams* ps, int n);
void rmsnorm(Backend b, const RmsNormParams& p);
void silu_mul(Backend b, const SiluMulParams& p);
void layer_norm(Backend b, const LayerNormParams& p);
void activate(Backend b, const ActivateParams& p);
void rope(Backend b, const RopeParams& p);
void embed(Backend b, const EmbedParams& p);
void gather_rows(Backend b, const GatherRowsParams& p);
void add_rows(Backend b, const AddRowsParams& p);
void lerp(Backend b, const LerpParams& p);
// Returns once nothing the backend still runs reads the weights (and
// biases) of earlier products given weights_outlive_call: call it before
// freeing them.
void release_weights(Backend b);
// Calls release_weights(backend) when it goes: an owner of weights declares
// it after them, so it runs before they are freed.
struct WeightsRelease {
  Backend backend;
  ~WeightsRelease() { release_weights(backend); }
};

// The host backends, for the dispatcher and for tests.
void matmul_reference(const MatmulParams& p);
void matmul_cpu(const MatmulParams& p);
void matmul_group_cpu(const MatmulParams* ps, int n);
void release_weights_cpu();
void rmsnorm_reference(const RmsNormParams& p);
void rmsnorm_cpu(const RmsNormParams& p);
void silu_mul_reference(const SiluMulParams& p);
void silu_mul_cpu(const SiluMulParams& p);
void rope_reference(const RopeParams& p);
void rope_cpu(const RopeParams& p);
void embed_host(const EmbedParams& p);
void gather_rows_host(const GatherRowsParams& p);
void add_rows_host(const AddRowsParams& p);
void lerp_host(const LerpParams& p);
void layer_norm_reference(const LayerNormParams& p);
void activate_reference(const ActivateParams& p);

// Host only (the sampler reads logits on the host): out[i] = exp((x[i] -
// shift) * scale) for i < n, and their sum; the cpu backend's vector exp
// (relative error about 2e-7), one thread.
struct ExpScaledParams {
  int64_t n = 0;
  const float* x = nullptr;  // [n]
  float shift = 0.0f, scale = 1.0f;
  float* out = nullptr;  // [n]
};
double exp_scaled_host(const ExpScaledParams& p);

// Host only (the sampler): the largest of x[0, n) and the lowest index
// holding it, NaNs ignored, and whether every x is finite; one thread,
// vector compares (the scalar std::max_element took about 100 µs over a
// 151,936-entry vocabulary).
struct MaxParams {
  int64_t n = 0;
  const float* x = nullptr;  // [n]
};
struct MaxFound {
  float value = 0.0f;  // -infinity when n == 0 or every x is NaN
  int64_t index = 0;   // n then
  bool finite = true;  // no NaN, no infinity
};
MaxFound max_host(const MaxParams& p);

// Host only (the sampler's top_k and top_p candidates): the indices i < n
// with x[i] >= floor, in increasing order, into ids, and how many; a NaN is
// never at least anything. ids past the count may be written too. One
// thread, vector compares (the scalar loop took about a third of a top_k
// draw over a 151,936-entry vocabulary).
struct AtLeastParams {
  int64_t n = 0;
  const float* x = nullptr;  // [n]
  float floor = 0.0f;
  int32_t* ids = nullptr;  // [n]
};
int64_t at_least_host(const AtLeastParams& p);

// Host only (the sampler's top_p): the indices i < n with x[i] == value, in
// increasing order, into ids, and how many. One thread, vector compares
// (the scalar scan of a vocabulary's buckets for the boundary's took about
// a fifth of the samples perf found in the sampler's own code).
struct EqualU16Params {
  int64_t n = 0;
  const uint16_t* x = nullptr;  // [n]
  uint16_t value = 0;
  int32_t* ids = nullptr;  // [n]
};
int64_t equal_u16_host(const EqualU16Params& p);

// Host only (the sampler's top_p): the bucket of each entry below top,
// out[i] = the integer part of (top - x[i]) * scale, or last where that is
// larger or not finite (x[i] -infinity or NaN); every x[i] <= top. One
// thread, vector arithmetic (the sampler's own loop was compiled for the
// baseline instruction set: 4 lanes).
struct BucketsParams {
  int64_t n = 0;
  const float* x = nullptr;  // [n]
  float top = 0.0f, scale = 1.0f;
  uint16_t last = 0;
  uint16_t* out = nullptr;  // [n]
};
void buckets_host(const BucketsParams& p);

// Host only (the sampler's nucleus): w[i] = 0 for every i < n with x[i] not
// at least floor (NaN included), the rest of w kept. One thread, vector
// compares (as for buckets_host).
struct ZeroBelowParams {
  int64_t n = 0;
  const float* x = nullptr;  // [n]
  float floor = 0.0f;
  float* w = nullptr;  // [n]
};
void zero_below_host(const ZeroBelowParams& p);

// Host only (the sampler's walk): out[b] = the sum in double of x[b * block,
// min(n, (b + 1) * block)) for every block b; one thread, widened a vector
// at a time (one at a time, about a fifth of an untruncated draw).
struct BlockSumsParams {
  int64_t n = 0;
  const float* x = nullptr;  // [n]
  int64_t block = 1;
  double* out = nullptr;  // [(n + block - 1) / block]
};
void block_sums_host(const BlockSumsParams& p);

}  // namespace mstar::kernels
