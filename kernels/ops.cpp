// Device-neutral half of the trunk ops: scalar checks and dispatch.
#include "ops.h"

#include <cstdint>
#include <vector>

#include <fmt/format.h>

#include "core/errors.h"
#include "core/ggml_blocks.h"
#include "kernels/op_table.h"

namespace mstar::kernels {

namespace {

void check(bool ok, const char* op, const std::string& what) {
  if (!ok) throw InputError(fmt::format("{}: {}", op, what));
}

void nonneg(const char* op, const char* name, int64_t v) {
  check(v >= 0, op, fmt::format("{} must not be negative, got {}", name, v));
}

// matmul's checks of p against what backend t takes; false: nothing to
// compute (no rows).
bool check_matmul(const char* op, const OpTable& t, const MatmulParams& p) {
  nonneg(op, "rows", p.rows);
  check(p.in > 0 && p.out > 0, op, fmt::format("in and out must be positive, got {} and {}", p.in, p.out));
  check(p.x_stride >= p.in && p.y_stride >= p.out, op,
        fmt::format("strides ({}, {}) smaller than the rows ({}, {})", p.x_stride, p.y_stride, p.in, p.out));
  check(p.threads >= 1, op, fmt::format("threads must be at least 1, got {}", p.threads));
  check(p.x_dtype == DType::f32 || p.x_dtype == DType::bf16 || p.x_dtype == DType::q8_0, op,
        fmt::format("activations are rounded to f32 or bf16 or quantised to q8_0, got {}", to_string(p.x_dtype)));
  check(p.x_dtype != DType::bf16 || t.bf16_activations, op,
        fmt::format("the {} backend takes no activations rounded to bf16", to_string(t.backend)));
  check(p.x_dtype != DType::q8_0 || t.q8_0_activations, op,
        fmt::format("the {} backend takes no activations quantised to q8_0", to_string(t.backend)));
  check(p.x_dtype != DType::q8_0 || !is_element_type(p.w_dtype), op,
        fmt::format("activations quantised to q8_0 go with weights of a block type, not {}", to_string(p.w_dtype)));
  check(p.x_dtype != DType::q8_0 || p.in % 32 == 0, op,
        fmt::format("activations quantised to q8_0 come in blocks of 32, which do not divide in = {}", p.in));
  check(t.takes_weights(p.w_dtype), op,
        fmt::format("the {} backend has no product for weights of dtype {}", to_string(t.backend), to_string(p.w_dtype)));
  check(fits_blocks(p.w_dtype, p.in), op,
        fmt::format("weights of dtype {} come in blocks of {}, which do not divide in = {}", to_string(p.w_dtype),
                    dtype_traits(p.w_dtype).block, p.in));
  check(layout_fits(p.w_layout, p.w_dtype, p.in), op,
        fmt::format("weights laid out as {} must be bf16 with an even width, got {} with width {}",
                    layout_name(p.w_layout), to_string(p.w_dtype), p.in));
  check(p.w_layout == WeightLayout::rows || t.pair_panels, op,
        fmt::format("the {} backend reads row-major weights only", to_string(t.backend)));
  if (p.rows == 0) return false;
  check(p.x && p.w && p.y, op, "x, w and y are required");
  return true;
}

// The bytes [begin, end) of rows x stride floats from p (the last row only
// up to its width).
struct Span {
  uintptr_t begin, end;
};
Span rows_span(const float* p, int64_t rows, int64_t stride, int64_t width) {
  const auto begin = reinterpret_cast<uintptr_t>(p);
  return {begin, begin + static_cast<uintptr_t>(((rows - 1) * stride + width) * 4)};
}
bool overlap(Span a, Span b) { return a.begin < b.end && b.begin < a.end; }

}  // namespace

void activations_as_read(const MatmulParams& p, int64_t r, float* out) {
  const float* x = p.x + r * p.x_stride;
  if (p.x_dtype == DType::q8_0) {
    MSTAR_ASSERT(p.in % 32 == 0, "activations_as_read: q8_0 comes in blocks of 32 (check_matmul)");
    std::vector<unsigned char> blocks(static_cast<std::size_t>(row_bytes(DType::q8_0, p.in)));  // [in / 32] blocks
    q8_0_from_f32(x, blocks.data(), p.in);
    q8_0_to_f32(blocks.data(), out, p.in);
    return;
  }
  for (int64_t i = 0; i < p.in; ++i) out[i] = round_to(p.x_dtype, x[i]);
}

void matmul(Backend b, const MatmulParams& p) {
  constexpr const char* op = "matmul";
  const OpTable& t = op_table(b, op);
  if (check_matmul(op, t, p)) t.matmul(p);
}

void matmul_group(Backend b, const MatmulParams* ps, int n) {
  constexpr const char* op = "matmul_group";
  const OpTable& t = op_table(b, op);
  check(n >= 0 && n <= kMatmulGroupMax, op, fmt::format("takes 0 to {} products, got {}", kMatmulGroupMax, n));
  // The products with rows, in order, and their places in ps.
  int live = 0;
  MatmulParams todo[kMatmulGroupMax];
  int index[kMatmulGroupMax];
  for (int i = 0; i < n; ++i)
    if (check_matmul(op, t, ps[i])) todo[live] = ps[i], index[live++] = i;
  // The backend may run them in any order, or interleaved.
  for (int i = 0; i < live; ++i)
    for (int j = 0; j < live; ++j) {
      if (i == j) continue;
      const MatmulParams &p = todo[i], &q = todo[j];
      const Span y = rows_span(p.y, p.rows, p.y_stride, p.out);
      check(!overlap(y, rows_span(q.x, q.rows, q.x_stride, q.in)), op,
            fmt::format("product {}'s y overlaps product {}'s x", index[i], index[j]));
      check(!overlap(y, rows_span(q.y, q.rows, q.y_stride, q.out)), op,
            fmt::format("products {} and {} write overlapping y", index[i], index[j]));
    }
  if (t.matmul_group) return t.matmul_group(todo, live);
  for (int i = 0; i < live; ++i) t.matmul(todo[i]);
}

void release_weights(Backend b) {
  // Called from destructors (WeightsRelease): a backend not built has no
  // product that could still read weights, so nothing to wait for.
  for (Backend built : built_backends())
    if (built == b) {
      const OpTable& t = op_table(b, "release_weights");
      if (t.release_weights) t.release_weights();
    }
}

void rmsnorm(Backend b, const RmsNormParams& p) {
  constexpr const char* op = "rmsnorm";
  nonneg(op, "rows", p.rows);
  check(p.width > 0, op, fmt::format("width must be positive, got {}", p.width));
  check(p.eps > 0.0, op, fmt::format("eps must be positive, got {}", p.eps));
  if (p.rows == 0) return;
  check(p.x && p.w && p.out, op, "x, w and out are required");
  op_table(b, op).rmsnorm(p);
}

void silu_mul(Backend b, const SiluMulParams& p) {
  constexpr const char* op = "silu_mul";
  nonneg(op, "n", p.n);
  if (p.n == 0) return;
  check(p.a && p.b, op, "a and b are required");
  op_table(b, op).silu_mul(p);
}

void layer_norm(Backend b, const LayerNormParams& p) {
  constexpr const char* op = "layer_norm";
  nonneg(op, "rows", p.rows);
  check(p.width > 0, op, fmt::format("width must be positive, got {}", p.width));
  check(p.eps > 0.0, op, fmt::format("eps must be positive, got {}", p.eps));
  if (p.rows == 0) return;
  check(p.x && p.out, op, "x and out are required");
  const OpTable& t = op_table(b, op);
  check(t.layer_norm != nullptr, op, fmt::format("the {} backend has no body for it", to_string(b)));
  t.layer_norm(p);
}

const char* activation_name(Activation a) {
  switch (a) {
    case Activation::silu: return "silu";
    case Activation::gelu: return "gelu";
    case Activation::gelu_tanh: return "gelu_tanh";
  }
  return "?";
}

void activate(Backend b, const ActivateParams& p) {
  constexpr const char* op = "activate";
  nonneg(op, "n", p.n);
  if (p.n == 0) return;
  check(p.a != nullptr, op, "a is required");
  const OpTable& t = op_table(b, op);
  check(t.activate != nullptr, op, fmt::format("the {} backend has no body for it", to_string(b)));
  t.activate(p);
}

void rope(Backend b, const RopeParams& p) {
  constexpr const char* op = "rope";
  nonneg(op, "tokens", p.tokens);
  check(p.heads > 0 && p.head_dim > 0 && p.head_dim % 2 == 0, op,
        fmt::format("needs heads > 0 and an even head_dim, got {} and {}", p.heads, p.head_dim));
  check(p.sections >= 1 && p.sections <= 3, op, fmt::format("sections must be 1 to 3, got {}", p.sections));
  int32_t pairs = 0;
  for (int32_t s = 0; s < p.sections; ++s) {
    const RopeSection& sec = p.section[s];
    check(sec.offset >= 0 && sec.count >= 0 && sec.offset + sec.count <= p.head_dim / 2, op,
          fmt::format("section {} (pairs {}..{}) outside the head's {} pairs", s, sec.offset, sec.offset + sec.count,
                      p.head_dim / 2));
    check(sec.count == 0 || sec.inv_freq, op, fmt::format("section {} has no inverse frequencies", s));
    pairs += sec.count;
  }
  check(pairs <= p.head_dim / 2, op, fmt::format("sections rotate {} pairs of {}", pairs, p.head_dim / 2));
  if (p.tokens == 0) return;
  check(p.x && p.positions, op, "x and positions are required");
  op_table(b, op).rope(p);
}

void embed(Backend b, const EmbedParams& p) {
  constexpr const char* op = "embed";
  nonneg(op, "tokens", p.tokens);
  check(p.width > 0, op, fmt::format("width must be positive, got {}", p.width));
  if (p.tokens == 0) return;
  check(p.ids && p.table && p.out, op, "ids, table and out are required");
  check(layout_fits(p.layout, p.dtype, p.width), op,
        fmt::format("a table laid out as {} must be bf16 with an even width, got {} with width {}",
                    layout_name(p.layout), to_string(p.dtype), p.width));
  const OpTable& t = op_table(b, op);
  check(p.layout == WeightLayout::rows || t.pair_panels, op,
        fmt::format("the {} backend reads row-major tables only", to_string(b)));
  check(t.takes_weights(p.dtype), op,
        fmt::format("the {} backend reads no table of dtype {}", to_string(b), to_string(p.dtype)));
  check(fits_blocks(p.dtype, p.width), op,
        fmt::format("a table of dtype {} comes in blocks of {}, which do not divide width = {}", to_string(p.dtype),
                    dtype_traits(p.dtype).block, p.width));
  check(p.layout == WeightLayout::rows || p.vocab > 0, op,
        fmt::format("a table laid out as {} needs its vocab, got {}", layout_name(p.layout), p.vocab));
  t.embed(p);
}

void gather_rows(Backend b, const GatherRowsParams& p) {
  constexpr const char* op = "gather_rows";
  nonneg(op, "rows", p.rows);
  check(p.width > 0, op, fmt::format("width must be positive, got {}", p.width));
  if (p.rows == 0) return;
  check(p.index && p.x && p.out, op, "index, x and out are required");
  op_table(b, op).gather_rows(p);
}

void add_rows(Backend b, const AddRowsParams& p) {
  constexpr const char* op = "add_rows";
  nonneg(op, "rows", p.rows);
  check(p.width > 0 && p.group > 0, op, fmt::format("width and group must be positive, got {} and {}", p.width, p.group));
  if (p.rows == 0) return;
  check(p.x && p.y, op, "x and y are required");
  op_table(b, op).add_rows(p);
}

void lerp(Backend b, const LerpParams& p) {
  constexpr const char* op = "lerp";
  nonneg(op, "n", p.n);
  if (p.n == 0) return;
  check(p.x && p.y, op, "x and y are required");
  op_table(b, op).lerp(p);
}

}  // namespace mstar::kernels
