// The trunk's per-instruction-set bodies (matmul's panels and packed tiles,
// rmsnorm, silu_mul) for the run's --isa (isa_main.cpp) against the
// reference (plain loops in double), on odd sizes, for every weight dtype.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <string>
#include <cstring>
#include <limits>
#include <vector>

#include "core/dtype.h"
#include "kernels/cpu/elementwise_cpu.h"
#include "kernels/cpu/isa.h"
#include "kernels/cpu/matmul_cpu.h"
#include "isa.h"
#include "kernels/ops.h"
#include "support.h"

using namespace mstar;
using namespace mstar::kernels;

namespace {

// Weights rounded to the dtype, stored as it would be in a checkpoint.
std::vector<unsigned char> stored(const std::vector<float>& w, DType dt) {
  std::vector<unsigned char> bytes(row_bytes(dt, static_cast<int64_t>(w.size())));
  for (size_t i = 0; i < w.size(); ++i) store_from_f32(bytes.data(), dt, i, w[i]);
  return bytes;
}

struct MatmulCase {
  int64_t rows, in, out;
  DType dt;
  bool bias, accumulate;
  int threads;
  DType x_dtype = DType::f32;
  WeightLayout layout = WeightLayout::rows;
};

// w [out, in] of bf16 as pair panels.
std::vector<unsigned char> as_pair_panels(std::vector<unsigned char> w, int64_t out, int64_t in) {
  rows_to_pair_panels(reinterpret_cast<uint16_t*>(w.data()), out, in);
  return w;
}

// Runs the case on `isa` and checks every output against the reference.
// Tolerance: both sum the same exactly widened products, in f32 against
// double, so the difference is bounded by the f32 summation error, a few
// ulps times the sum of the terms' magnitudes: 1e-5 of it for in <= 512.
// With bf16 activations both multiply the same rounded values (vdpbf16ps's
// pair products are exact in f32), so the tolerance is the same; a body that
// skipped the rounding would be off by about 2^-9 of the magnitude, 400 times
// more.
void check_matmul(const MatmulCase& c, CpuIsa isa, MatmulPath path) {
  CAPTURE(c.rows);
  CAPTURE(c.in);
  CAPTURE(c.out);
  CAPTURE(to_string(c.dt));
  CAPTURE(c.bias);
  CAPTURE(c.accumulate);
  CAPTURE(cpu_isa_name(isa));
  const std::string path_name = path == MatmulPath::panels ? "panels" : path == MatmulPath::packed ? "packed" : "tiles";
  CAPTURE(path_name);
  CAPTURE(to_string(c.x_dtype));
  CAPTURE(layout_name(c.layout));
  test::Rng rng(static_cast<uint64_t>(c.rows * 1000003 + c.in * 1009 + c.out));
  const int64_t xs = c.in + 3, ys = c.out + 5;  // strides wider than the rows
  const std::vector<float> x = rng.normals(static_cast<size_t>(c.rows * xs));
  const std::vector<unsigned char> w = stored(rng.normals(static_cast<size_t>(c.out * c.in)), c.dt);
  const std::vector<float> bias = rng.normals(static_cast<size_t>(c.out));
  const std::vector<float> y0 = rng.normals(static_cast<size_t>(c.rows * ys));
  std::vector<float> want = y0, got = y0;
  MatmulParams p;
  p.rows = c.rows, p.in = c.in, p.out = c.out;
  p.x = x.data(), p.x_stride = xs;
  p.x_dtype = c.x_dtype;
  const std::vector<unsigned char> laid = c.layout == WeightLayout::rows ? w : as_pair_panels(w, c.out, c.in);
  p.w = laid.data(), p.w_dtype = c.dt, p.w_layout = c.layout;
  p.bias = c.bias ? bias.data() : nullptr;
  p.y_stride = ys;
  p.accumulate = c.accumulate;
  p.threads = c.threads;
  p.y = want.data();
  matmul_reference(p);
  p.y = got.data();
  matmul_cpu_path(p, isa, path);
  for (int64_t r = 0; r < c.rows; ++r)
    for (int64_t o = 0; o < ys; ++o) {
      const size_t i = static_cast<size_t>(r * ys + o);
      if (o >= c.out) {  // past the row: untouched
        REQUIRE(got[i] == y0[i]);
        continue;
      }
      double mag = std::fabs(c.accumulate ? y0[i] : 0.0f) + (c.bias ? std::fabs(bias[static_cast<size_t>(o)]) : 0.0);
      for (int64_t k = 0; k < c.in; ++k)
        mag += std::fabs(x[static_cast<size_t>(r * xs + k)] *
                         load_as_f32(w.data(), c.dt, static_cast<size_t>(o * c.in + k)));
      REQUIRE(std::fabs(got[i] - want[i]) <= 1e-5 * mag + 1e-6);
    }
}

void matmul_cases(CpuIsa isa, DType x_dtype) {
  for (DType dt : {DType::f32, DType::f16, DType::bf16})
    for (int64_t rows : {1, 3, 16, 17, 54})
      for (int64_t in : {17, 54, 97, 128})
        for (int64_t out : {17, 97}) {
          const bool bias = (rows + in) % 2 == 0, accumulate = (in + out) % 3 == 0;
          for (MatmulPath path : {MatmulPath::panels, MatmulPath::packed, MatmulPath::tiles})
            check_matmul({rows, in, out, dt, bias, accumulate, static_cast<int>(1 + rows % 2), x_dtype}, isa, path);
        }
}

}  // namespace

TEST_CASE("matmul: the instruction set's panels and packed tiles agree with the reference") {
  matmul_cases(test::isa_under_test(), DType::f32);
  // Packed panels that end inside a block of 8 columns, past a whole one
  // (avx2 packs 16 columns a panel, avx-512 32; the blocks are transposed
  // in registers, the rest one by one).
  for (DType dt : {DType::f32, DType::f16, DType::bf16})
    for (int64_t out : {29, 45})
      check_matmul({17, 97, out, dt, true, true, 2}, test::isa_under_test(), MatmulPath::packed);
  // One row over long rows of bf16 weights: avx512's one-row body splits x
  // 1,024 elements a block and reads 64, then 32, then one at a time (1061:
  // a second block of 32 and a tail of 5; 2113: three blocks, the last of
  // 64, and a tail of one).
  for (int64_t in : {1061, 2113})
    for (bool accumulate : {false, true})
      check_matmul({1, in, 97, DType::bf16, !accumulate, accumulate, 2}, test::isa_under_test(), MatmulPath::panels);
}

// ggml's block types (core/ggml_blocks.h) through the instruction set's
// block_panel, whichever path is named (block types have only the panels),
// against the reference: rows past a register tile, several 512-element
// runs of a row, columns past a tile, f32 and bf16 activations, and x
// quantised to q8_0 (the integer bodies, matmul_panel_q8).
TEST_CASE("matmul: the instruction set's block bodies agree with the reference") {
  for (DType dt : {DType::q8_0, DType::q4_0, DType::q4_k, DType::q5_k, DType::q6_k})
    for (int64_t rows : {1, 5, 17})
      for (int64_t in : {256, 1280})
        for (DType x_dtype : {DType::f32, DType::bf16, DType::q8_0}) {
          CAPTURE(to_string(dt));
          CAPTURE(rows);
          CAPTURE(in);
          CAPTURE(to_string(x_dtype));
          const int64_t out = 37, xs = in + 3, ys = out + 5;
          test::Rng rng(static_cast<uint64_t>(rows * 7919 + in));
          const std::vector<float> x = rng.normals(static_cast<size_t>(rows * xs));
          const std::vector<unsigned char> w = test::random_blocks(rng, dt, out * in);
          std::vector<float> wide(static_cast<size_t>(out * in));  // [out, in]: w as f32
          dtype_traits(dt).to_f32(w.data(), wide.data(), out * in);
          const std::vector<float> bias = rng.normals(static_cast<size_t>(out));
          const std::vector<float> y0 = rng.normals(static_cast<size_t>(rows * ys));
          std::vector<float> want = y0, got = y0;
          MatmulParams p;
          p.rows = rows, p.in = in, p.out = out, p.x = x.data(), p.x_stride = xs, p.x_dtype = x_dtype;
          p.w = w.data(), p.w_dtype = dt, p.bias = bias.data(), p.y_stride = ys, p.accumulate = rows % 2 == 1;
          p.threads = 2;
          p.y = want.data();
          matmul_reference(p);
          for (MatmulPath path : {MatmulPath::panels, MatmulPath::packed}) {
            got = y0;
            p.y = got.data();
            matmul_cpu_path(p, test::isa_under_test(), path);
            for (int64_t r = 0; r < rows; ++r)
              for (int64_t o = 0; o < ys; ++o) {
                const size_t i = static_cast<size_t>(r * ys + o);
                if (o >= out) {
                  REQUIRE(got[i] == y0[i]);
                  continue;
                }
                double mag = std::fabs(p.accumulate ? y0[i] : 0.0f) + std::fabs(bias[static_cast<size_t>(o)]);
                for (int64_t k = 0; k < in; ++k)
                  mag += std::fabs(x[static_cast<size_t>(r * xs + k)] * wide[static_cast<size_t>(o * in + k)]);
                REQUIRE(std::fabs(got[i] - want[i]) <= 1e-5 * mag + 1e-6);
              }
          }
        }
}

// Weights as pair panels (weight_layout.h): every set reads them, for any
// rows and whichever path is named (the panels take them all): out 5, 17,
// 48 and 97 end in a part panel (masked on AVX-512: part of the first
// vector, a whole vector and part of the second, three whole vectors,
// part of the third), 128 in whole ones; in 1062 is long rows of
// weights; rows 97 past the panels' usual limit.
TEST_CASE("matmul: weights as pair panels agree with the reference") {
  for (DType x_dtype : {DType::f32, DType::bf16})
    for (int64_t rows : {1, 2, 3, 6, 16, 17, 54, 97})
      for (int64_t in : {2, 54, 128, 1062})
        for (int64_t out : {5, 17, 48, 97, 128}) {
          const bool bias = (rows + in) % 2 == 0, accumulate = (rows + out) % 3 == 0;
          const MatmulPath path = rows % 3 == 0 ? MatmulPath::packed : rows % 3 == 1 ? MatmulPath::panels
                                                                                      : MatmulPath::tiles;
          check_matmul({rows, in, out, DType::bf16, bias, accumulate, static_cast<int>(1 + rows % 2), x_dtype,
                        WeightLayout::pair_panels},
                       test::isa_under_test(), path);
        }
}

// avx512_bf16 runs its vdpbf16ps bodies here (bf16 weights); every other set,
// and the other weight dtypes, multiply the rounded activations in f32.
TEST_CASE("matmul: activations rounded to bf16 give the reference's product of the rounded values") {
  matmul_cases(test::isa_under_test(), DType::bf16);
  // Rows long enough for several 32-element steps and a masked last one,
  // with the pair padding of an odd width.
  for (int64_t in : {1, 31, 33, 895, 896})
    for (MatmulPath path : {MatmulPath::panels, MatmulPath::packed, MatmulPath::tiles})
      check_matmul({5, in, 37, DType::bf16, true, false, 2, DType::bf16}, test::isa_under_test(), path);
  // amx_bf16's tiles take rows 32 at a time and a last 16 (97: three of 32
  // and one of 16 holding a single row; 48: one and one), columns 32 a task
  // (out 97: three whole tasks and one of a single column), and k in steps of
  // 32: in 97 ends three into its fourth, so every task packs its weights;
  // in 128 lets whole tasks read them as they are (the last one still
  // packs). Every other set takes the packed path.
  for (int64_t in : {97, 128})
    for (int64_t rows : {32, 48, 97})
      for (bool accumulate : {false, true})
        check_matmul({rows, in, 97, DType::bf16, !accumulate, accumulate, 2, DType::bf16}, test::isa_under_test(),
                     MatmulPath::tiles);
  // One row over long rows of weights: the pairs' one-row body takes k 128
  // at a time, then 32 at a time, then a masked last step.
  for (int64_t in : {1536, 1537, 2113})
    check_matmul({1, in, 37, DType::bf16, true, true, 2, DType::bf16}, test::isa_under_test(), MatmulPath::panels);
  // From 16 rows the pair panels take k in blocks of at most 1,024: the
  // later blocks add to what the first wrote, the bias and y's old value
  // count once, and the last block ends in a masked step.
  for (int64_t in : {1025, 2113})
    for (bool accumulate : {false, true})
      check_matmul({17, in, 37, DType::bf16, true, accumulate, 2, DType::bf16}, test::isa_under_test(),
                   MatmulPath::panels);
}

TEST_CASE("matmul: a NaN activation stays NaN after rounding to bf16") {
  // f32_to_bf16 keeps NaN a NaN (truncating a NaN with a low payload would
  // make an infinity); the vector rounding must agree.
  std::vector<float> x(40, 1.0f);
  uint32_t low_payload_nan = 0x7f800001u;
  std::memcpy(&x[33], &low_payload_nan, sizeof(float));
  const std::vector<unsigned char> w = stored(std::vector<float>(40, 1.0f), DType::bf16);
  float y = 0.0f;
  MatmulParams p;
  p.rows = 1, p.in = 40, p.out = 1;
  p.x = x.data(), p.x_stride = 40, p.x_dtype = DType::bf16;
  p.w = w.data(), p.w_dtype = DType::bf16;
  p.y = &y, p.y_stride = 1;
  for (MatmulPath path : {MatmulPath::panels, MatmulPath::packed}) {
    y = 0.0f;
    matmul_cpu_path(p, test::isa_under_test(), path);
    REQUIRE(std::isnan(y));
  }
}

namespace {

// |got - want| <= rel * |want| + abs, entry by entry.
void require_close(const std::vector<float>& got, const std::vector<float>& want, double rel, double abs) {
  REQUIRE(got.size() == want.size());
  for (size_t i = 0; i < got.size(); ++i) {
    CAPTURE(i);
    REQUIRE(std::fabs(got[i] - want[i]) <= rel * std::fabs(want[i]) + abs);
  }
}

void elementwise_cases(CpuIsa isa) {
  CAPTURE(cpu_isa_name(isa));
  test::Rng rng(23);
  // RMSNorm. Tolerance: the sum of squares is f32 against the reference's
  // double, a relative error of a few 1e-7 at these widths; 1e-5 relative.
  for (int64_t rows : {1, 17, 54})
    for (int64_t width : {17, 54, 97, 896}) {
      CAPTURE(rows);
      CAPTURE(width);
      const std::vector<float> x = rng.normals(static_cast<size_t>(rows * width)), w = rng.normals(static_cast<size_t>(width));
      std::vector<float> want(x.size()), got(x.size());
      rmsnorm_reference({rows, width, x.data(), w.data(), 1e-6, want.data(), 1});
      rmsnorm_cpu_isa({rows, width, x.data(), w.data(), 1e-6, got.data(), 2}, isa);
      require_close(got, want, 1e-5, 1e-6);
    }
  // SwiGLU. Tolerance: the vector exp's relative error is about 2e-7, one
  // division and one product add a few ulps; 1e-5 relative.
  for (int64_t n : {17, 54, 97, 4097, 10007}) {
    CAPTURE(n);
    std::vector<float> a = rng.normals(static_cast<size_t>(n)), b = rng.normals(static_cast<size_t>(n));
    for (size_t i = 0; i < a.size(); i += 7) a[i] *= 30.0f;  // both tails of the exp
    std::vector<float> want = a, got = a;
    silu_mul_reference({n, want.data(), b.data(), 1});
    silu_mul_cpu_isa({n, got.data(), b.data(), 2}, isa);
    require_close(got, want, 1e-5, 1e-6);
  }
}

}  // namespace

TEST_CASE("rmsnorm and silu_mul: the instruction set's body agrees with the reference") {
  elementwise_cases(test::isa_under_test());
}

TEST_CASE("exp_scaled: the instruction set's body against std::exp in double, and the sum") {
  const CpuIsa isa = test::isa_under_test();
  test::Rng rng(31);
  // Tolerance: the vector exp's relative error is about 2e-7; the argument
  // is rounded to f32 twice (the difference, the product), an absolute error
  // of about 1.2e-7 |arg| that exp turns into as much relative error. The sum
  // adds each lane's f32 running sum over a block of 4096 entries (256 terms
  // a lane: at most 256 ulps, 1.5e-5, typically far less); 2e-5 relative.
  for (int64_t n : {1, 17, 54, 97, 4097, 151936}) {
    CAPTURE(n);
    std::vector<float> x = rng.normals(static_cast<size_t>(n));
    for (size_t i = 0; i < x.size(); i += 5) x[i] *= 40.0f;  // far below the shift too: flushed towards 0
    const float shift = *std::max_element(x.begin(), x.end()), scale = 1.25f;
    std::vector<float> got(x.size());
    const double sum = exp_scaled_cpu_isa({n, x.data(), shift, scale, got.data()}, isa);
    double want_sum = 0;
    for (size_t i = 0; i < x.size(); ++i) {
      const double arg = (static_cast<double>(x[i]) - shift) * scale, want = std::exp(arg);
      want_sum += want;
      CAPTURE(i);
      REQUIRE(std::fabs(got[i] - want) <= (1e-6 + 2.5e-7 * std::fabs(arg)) * want + 1e-37);
    }
    CHECK(std::fabs(sum - want_sum) <= 2e-5 * want_sum);
  }
}

TEST_CASE("max: the instruction set's body finds the largest and its lowest index, NaNs ignored, and sees any non-finite") {
  const CpuIsa isa = test::isa_under_test();
  test::Rng rng(37);
  const float nan = std::numeric_limits<float>::quiet_NaN(), inf = std::numeric_limits<float>::infinity();
  // The plain definition: the first strict maximum over the non-NaN entries.
  const auto plain = [&](const std::vector<float>& x) {
    MaxFound f{-inf, static_cast<int64_t>(x.size())};
    for (size_t i = 0; i < x.size(); ++i)
      if (x[i] > f.value || (x[i] == f.value && f.index == static_cast<int64_t>(x.size())))
        f = {x[i], static_cast<int64_t>(i)};
    return f;
  };
  for (int64_t n : {1, 15, 16, 17, 54, 97, 4097, 151936}) {
    CAPTURE(n);
    std::vector<float> x = rng.normals(static_cast<size_t>(n));
    std::vector<std::vector<float>> cases{x};
    // The maximum repeated (lowest index wins), at the end, NaNs before it.
    std::vector<float> ties = x;
    const float top = *std::max_element(x.begin(), x.end());
    for (size_t i = ties.size() / 3; i < ties.size(); i += 7) ties[i] = top;
    cases.push_back(ties);
    std::vector<float> last = x;
    last.back() = top + 1.0f;
    cases.push_back(last);
    std::vector<float> nans = x;
    for (size_t i = 0; i < nans.size(); i += 3) nans[i] = nan;
    cases.push_back(nans);
    cases.push_back(std::vector<float>(x.size(), -inf));
    for (const auto& c : cases) {
      const MaxFound got = max_cpu_isa({n, c.data()}, isa), want = plain(c);
      CHECK(got.value == want.value);
      CHECK(got.index == want.index);
      CHECK(got.finite == std::all_of(c.begin(), c.end(), [](float v) { return std::isfinite(v); }));
    }
  }
  // Nothing to find: no entries, or only NaNs.
  const std::vector<float> all_nan(33, nan);
  const MaxFound none = max_cpu_isa({33, all_nan.data()}, isa);
  CHECK(none.value == -inf);
  CHECK(none.index == 33);
  CHECK_FALSE(none.finite);
  // One infinity among finite entries, in the vector part and in the tail.
  for (int64_t at : {5, 32}) {
    std::vector<float> x(33, 1.0f);
    x[static_cast<size_t>(at)] = inf;
    const MaxFound f = max_cpu_isa({33, x.data()}, isa);
    CHECK(f.index == at);
    CHECK_FALSE(f.finite);
  }
  CHECK(max_cpu_isa({0, nullptr}, isa).index == 0);
}

namespace {

// A selection's ids (body(ids) writes them and says how many) against the
// plain loop's: every i < n that keep(i) holds for, in order.
template <class Keep, class Body>
void check_ids(size_t n, Keep keep, Body body) {
  std::vector<int32_t> want;
  for (size_t i = 0; i < n; ++i)
    if (keep(i)) want.push_back(static_cast<int32_t>(i));
  std::vector<int32_t> got(n, -1);
  const int64_t found = body(got.data());
  REQUIRE(found == static_cast<int64_t>(want.size()));
  got.resize(static_cast<size_t>(found));
  CHECK(got == want);
}

}  // namespace

TEST_CASE("at_least: the instruction set's body finds every index at or above the floor, in order, never a NaN") {
  const CpuIsa isa = test::isa_under_test();
  test::Rng rng(41);
  const float nan = std::numeric_limits<float>::quiet_NaN(), inf = std::numeric_limits<float>::infinity();
  for (int64_t n : {1, 15, 16, 17, 54, 97, 4097, 151936}) {
    CAPTURE(n);
    std::vector<float> x = rng.normals(static_cast<size_t>(n));
    for (size_t i = 0; i < x.size(); i += 11) x[i] = nan;
    for (size_t i = 3; i < x.size(); i += 13) x[i] = i % 2 ? inf : -inf;
    for (size_t i = 5; i < x.size(); i += 17) x[i] = 1.5f;  // entries equal to a floor
    for (float floor : {-inf, -1.0f, 1.5f, 2.5f, inf}) {
      CAPTURE(floor);
      check_ids(x.size(), [&](size_t i) { return x[i] >= floor; },
                [&](int32_t* ids) { return at_least_cpu_isa({n, x.data(), floor, ids}, isa); });
    }
  }
  CHECK(at_least_cpu_isa({0, nullptr, 0.0f, nullptr}, isa) == 0);
}

TEST_CASE("equal_u16: the instruction set's body finds every index holding the value, in order") {
  const CpuIsa isa = test::isa_under_test();
  test::Rng rng(47);
  for (int64_t n : {1, 15, 16, 17, 31, 32, 33, 54, 97, 4097, 151936}) {
    CAPTURE(n);
    // Values from a few buckets, so each is held by many entries, and the
    // extremes of the type.
    std::vector<uint16_t> x(static_cast<size_t>(n));
    const std::vector<float> r = rng.normals(x.size());
    for (size_t i = 0; i < x.size(); ++i) x[i] = static_cast<uint16_t>(std::fabs(r[i]) * 3.0f);
    for (size_t i = 4; i < x.size(); i += 9) x[i] = 0xffff;
    for (uint16_t value : {uint16_t{0}, uint16_t{1}, uint16_t{5}, uint16_t{0xffff}, uint16_t{1000}}) {
      CAPTURE(value);
      check_ids(x.size(), [&](size_t i) { return x[i] == value; },
                [&](int32_t* ids) { return equal_u16_cpu_isa({n, x.data(), value, ids}, isa); });
    }
  }
  CHECK(equal_u16_cpu_isa({0, nullptr, 0, nullptr}, isa) == 0);
}

// Tolerance: each block's sum is of at most 151,936 doubles, each an f32
// widened exactly, in another order than the plain loop's: the two differ by
// at most n ulps of the sum of magnitudes (2.2e-16 each), 1e-10 relative.
TEST_CASE("block_sums: the instruction set's body sums every block in double") {
  const CpuIsa isa = test::isa_under_test();
  test::Rng rng(43);
  for (int64_t n : {1, 15, 17, 54, 97, 4097, 151936})
    for (int64_t block : {int64_t{1}, int64_t{7}, int64_t{1024}, n, n + 5}) {
      CAPTURE(n);
      CAPTURE(block);
      std::vector<float> x = rng.normals(static_cast<size_t>(n));
      for (float& v : x) v = std::exp(3.0f * v);  // weights: positive, spread over orders of magnitude
      const int64_t blocks = (n + block - 1) / block;
      std::vector<double> got(static_cast<size_t>(blocks) + 1, -1.0);
      block_sums_cpu_isa({n, x.data(), block, got.data()}, isa);
      for (int64_t b = 0; b < blocks; ++b) {
        double want = 0;
        for (int64_t i = b * block; i < std::min(n, (b + 1) * block); ++i) want += x[static_cast<size_t>(i)];
        CAPTURE(b);
        CHECK(std::fabs(got[static_cast<size_t>(b)] - want) <= 1e-10 * want);
      }
      CHECK(got.back() == -1.0);  // nothing past the last block
    }
}

TEST_CASE("buckets: the instruction set's body gives the plain loop's bucket, the last for every non-finite z") {
  const CpuIsa isa = test::isa_under_test();
  test::Rng rng(53);
  const float nan = std::numeric_limits<float>::quiet_NaN(), inf = std::numeric_limits<float>::infinity();
  for (int64_t n : {1, 7, 8, 15, 16, 17, 54, 97, 4097, 151936}) {
    CAPTURE(n);
    std::vector<float> x = rng.normals(static_cast<size_t>(n));
    for (float& v : x) v *= 3.0f;
    for (size_t i = 2; i < x.size(); i += 11) x[i] = -inf;
    for (size_t i = 6; i < x.size(); i += 13) x[i] = nan;
    float top = -inf;
    for (float v : x) top = v > top ? v : top;
    if (top == -inf) top = 0.0f;  // every entry -infinity or NaN
    // The sampler's scale (4,096 buckets over 40 at temperature 0.8), one
    // that sends most entries to the last, and one that keeps all in the first.
    for (float scale : {128.0f, 1e6f, 1e-3f})
      for (uint16_t last : {uint16_t{4095}, uint16_t{9}}) {
        CAPTURE(scale);
        CAPTURE(last);
        std::vector<uint16_t> got(x.size() + 1, 0xabcd);
        buckets_cpu_isa({n, x.data(), top, scale, last, got.data()}, isa);
        for (size_t i = 0; i < x.size(); ++i) {
          const float z = (top - x[i]) * scale;
          const uint16_t want = z < static_cast<float>(last) ? static_cast<uint16_t>(z) : last;
          CAPTURE(i);
          CHECK(got[i] == want);
        }
        CHECK(got.back() == 0xabcd);  // nothing past n
      }
  }
}

TEST_CASE("zero_below: the instruction set's body zeroes exactly the weights whose x is not at least the floor") {
  const CpuIsa isa = test::isa_under_test();
  test::Rng rng(59);
  const float nan = std::numeric_limits<float>::quiet_NaN(), inf = std::numeric_limits<float>::infinity();
  for (int64_t n : {1, 7, 8, 15, 16, 17, 54, 97, 4097, 151936}) {
    CAPTURE(n);
    std::vector<float> x = rng.normals(static_cast<size_t>(n));
    for (size_t i = 0; i < x.size(); i += 11) x[i] = nan;
    for (size_t i = 3; i < x.size(); i += 13) x[i] = i % 2 ? inf : -inf;
    for (size_t i = 5; i < x.size(); i += 17) x[i] = 0.5f;  // entries equal to a floor
    const std::vector<float> w = rng.normals(x.size());
    for (float floor : {-inf, -1.0f, 0.5f, std::nextafter(0.5f, inf), inf}) {
      CAPTURE(floor);
      std::vector<float> got = w;
      got.push_back(7.0f);
      zero_below_cpu_isa({n, x.data(), floor, got.data()}, isa);
      for (size_t i = 0; i < x.size(); ++i) {
        CAPTURE(i);
        CHECK(got[i] == (x[i] >= floor ? w[i] : 0.0f));
      }
      CHECK(got.back() == 7.0f);  // nothing past n
    }
  }
}

// With weights_outlive_call a product of few rows runs its panels as a redo
// job (matmul_cpu.cpp): a helper's panels are computed aside and copied in.
// The bits must be those of the ordinary job, bias and accumulation
// included.
TEST_CASE("matmul: panels run as a redo job give the ordinary job's bits") {
  const CpuIsa isa = test::isa_under_test();
  const auto check = [&](DType dt, DType x_dtype, int64_t rows, int64_t in, int64_t out, int threads,
                         WeightLayout layout) {
    CAPTURE(to_string(dt));
    CAPTURE(to_string(x_dtype));
    CAPTURE(rows);
    CAPTURE(in);
    CAPTURE(out);
    CAPTURE(threads);
    CAPTURE(layout_name(layout));
    const bool bias = (rows + in) % 2 == 0, accumulate = (in + out) % 3 == 0;
    test::Rng rng(static_cast<uint64_t>(rows * 7919 + in * 31 + out));
    const int64_t xs = in + 3, ys = out + 5;
    const std::vector<float> x = rng.normals(static_cast<size_t>(rows * xs));
    std::vector<unsigned char> w = stored(rng.normals(static_cast<size_t>(out * in)), dt);
    if (layout == WeightLayout::pair_panels) w = as_pair_panels(std::move(w), out, in);
    const std::vector<float> b = rng.normals(static_cast<size_t>(out));
    const std::vector<float> y0 = rng.normals(static_cast<size_t>(rows * ys));
    std::vector<float> want = y0, got = y0;
    MatmulParams p;
    p.rows = rows, p.in = in, p.out = out;
    p.x = x.data(), p.x_stride = xs, p.x_dtype = x_dtype;
    p.w = w.data(), p.w_dtype = dt, p.w_layout = layout;
    p.bias = bias ? b.data() : nullptr;
    p.y_stride = ys, p.accumulate = accumulate, p.threads = threads;
    p.y = want.data();
    matmul_cpu_path(p, isa, MatmulPath::panels);
    p.y = got.data();
    p.weights_outlive_call = true;
    matmul_cpu_path(p, isa, MatmulPath::panels);
    release_weights(Backend::cpu);  // before w goes
    REQUIRE(std::memcmp(got.data(), want.data(), got.size() * sizeof(float)) == 0);
  };
  for (DType dt : {DType::f32, DType::f16, DType::bf16})
    for (DType x_dtype : {DType::f32, DType::bf16})
      for (int64_t rows : {1, 2, 4, 17, 54})
        for (int64_t in : {17, 97, 1537})
          for (int64_t out : {17, 1000})
            for (int threads : {2, 3}) check(dt, x_dtype, rows, in, out, threads, WeightLayout::rows);
  // Pair panels: a part panel aside is read where it lies in the matrix.
  for (DType x_dtype : {DType::f32, DType::bf16})
    for (int64_t rows : {1, 2, 17, 54})
      for (int64_t in : {54, 1538})
        for (int64_t out : {17, 1000}) check(DType::bf16, x_dtype, rows, in, out, 2, WeightLayout::pair_panels);
}
