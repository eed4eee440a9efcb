// matmul on the backend under test (on_backend.h) against the reference:
// f32, f16 and bf16 weights, 1 to 97 rows, odd shapes and one that splits K,
// bias and accumulate, strided rows whose gaps stay untouched; ggml's block
// types (core/ggml_blocks.h) where the backend takes them, refused by name
// where it does not, each row of a batch equal to that row alone.
//
// Tolerance: the error is bounded by u * sum_i |x_i w_i| (u the unit
// roundoff of what is rounded) plus f32 accumulation (about sqrt(in) * 2^-24
// of the same sum for random signs): with f32 activations 2e-5 of
// sum |x w|. A backend may round activations to the weights' dtype where
// that is its fast path (cuda's cuBLAS path for more than 16 rows of 16-bit
// weights): f16 (11 significant bits, u = 2^-11) 1e-3, bf16 (8 bits,
// u = 2^-8) 1e-2 of sum |x w|.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <utility>
#include <vector>

#include <fmt/format.h>

#include "core/errors.h"
#include "kernels/op_table.h"
#include "kernels/ops.h"
#include "on_backend.h"

using namespace mstar;
using namespace mstar::kernels;

namespace {

// Largest |got - want| / (sum_i |x_i w_i| + |bias| + |y_before|) over the outputs.
double matmul_error(const MatmulParams& p, const std::vector<float>& x, const std::vector<unsigned char>& w,
                    const std::vector<float>& bias, const std::vector<float>& y_before, const std::vector<float>& got,
                    const std::vector<float>& want) {
  std::vector<float> wide(static_cast<size_t>(p.out * p.in));  // [out, in]: w as f32
  dtype_traits(p.w_dtype).to_f32(w.data(), wide.data(), p.out * p.in);
  double worst = 0;
  for (int64_t r = 0; r < p.rows; ++r)
    for (int64_t o = 0; o < p.out; ++o) {
      double mag = 0;
      for (int64_t i = 0; i < p.in; ++i)
        mag += std::fabs(static_cast<double>(x[static_cast<size_t>(r * p.x_stride + i)]) *
                         wide[static_cast<size_t>(o * p.in + i)]);
      if (!bias.empty()) mag += std::fabs(bias[static_cast<size_t>(o)]);
      const auto at = static_cast<size_t>(r * p.y_stride + o);
      if (p.accumulate) mag += std::fabs(y_before[at]);
      worst = std::max(worst, std::fabs(static_cast<double>(got[at]) - want[at]) / (mag + 1e-30));
    }
  return worst;
}

}  // namespace

TEST_CASE("matmul: f32, f16 and bf16 weights, 1 to 97 rows, bias and accumulate") {
  const std::pair<int64_t, int64_t> shapes[] = {
      {97, 54}, {17, 33}, {256, 128}, {4096, 64}};  // (in, out); the last splits K
  for (DType wdt : {DType::f32, DType::f16, DType::bf16})
    for (int64_t rows : {1, 5, 17, 97})
      for (auto [in, out] : shapes)
        for (int variant = 0; variant < 2; ++variant) {
          CAPTURE(to_string(wdt));
          CAPTURE(rows);
          CAPTURE(in);
          CAPTURE(out);
          CAPTURE(variant);
          test::Rng rng(static_cast<uint64_t>(rows * 1000 + in + out + variant));
          MatmulParams p;
          p.rows = rows;
          p.in = in;
          p.out = out;
          p.x_stride = in + 3;
          p.y_stride = out + 5;
          p.w_dtype = wdt;
          p.accumulate = variant == 1;
          const std::vector<float> x = rng.normals(static_cast<size_t>(rows * p.x_stride));
          const std::vector<unsigned char> w = test::random_values(rng, wdt, out * in);
          const std::vector<float> bias = variant == 1 ? rng.normals(static_cast<size_t>(out)) : std::vector<float>{};
          const std::vector<float> y0 = rng.normals(static_cast<size_t>(rows * p.y_stride));
          std::vector<float> want = y0;
          MatmulParams hp = p;
          hp.x = x.data();
          hp.w = w.data();
          hp.bias = bias.empty() ? nullptr : bias.data();
          hp.y = want.data();
          matmul(Backend::reference, hp);
          DeviceBuffer dx = test::upload(x), dw = test::upload(w), db = test::upload(bias), dy = test::upload(y0);
          p.x = static_cast<const float*>(dx.data());
          p.w = dw.data();
          p.bias = bias.empty() ? nullptr : static_cast<const float*>(db.data());
          p.y = static_cast<float*>(dy.data());
          matmul(test::backend_under_test(), p);
          const std::vector<float> got = test::download<float>(dy, y0.size());
          // Only cuda's cuBLAS path rounds activations (above).
          const bool rounded = test::backend_under_test() == Backend::cuda && rows > 16 && wdt != DType::f32;
          const double tol = !rounded ? 2e-5 : wdt == DType::f16 ? 1e-3 : 1e-2;
          CHECK(matmul_error(p, x, w, bias, y0, got, want) <= tol);
          // The gaps between rows (y_stride > out) are untouched.
          for (int64_t r = 0; r < rows; ++r)
            for (int64_t o = out; o < p.y_stride; ++o)
              CHECK(got[static_cast<size_t>(r * p.y_stride + o)] == y0[static_cast<size_t>(r * p.y_stride + o)]);
        }
}

// Block types widen exactly (to_f32), so the f32 tolerance above holds; a
// batch's row is computed in the order that row alone is, bit for bit.
// Variant 2 quantises x to q8_0 (MatmulParams::x_dtype): the reference
// multiplies the dequantised x, which the backend's integer products must
// match to the same tolerance (the quantisation's own error is in neither).
TEST_CASE("matmul: ggml's block types, 1 to 97 rows, bias and accumulate, x quantised, batched equal to one by one") {
  for (DType wdt : {DType::q8_0, DType::q4_0, DType::q4_k, DType::q5_k, DType::q6_k})
    for (int64_t rows : {1, 5, 17, 97})
      for (auto [in, out] : {std::pair<int64_t, int64_t>{256, 17}, {768, 54}, {512, 97}})
        for (int variant = 0; variant < 3; ++variant) {
          CAPTURE(to_string(wdt));
          CAPTURE(rows);
          CAPTURE(in);
          CAPTURE(out);
          CAPTURE(variant);
          test::Rng rng(static_cast<uint64_t>(rows * 1000 + in + out + variant));
          MatmulParams p;
          p.rows = rows, p.in = in, p.out = out, p.x_stride = in + 3, p.y_stride = out + 5;
          p.w_dtype = wdt;
          p.accumulate = variant == 1;
          p.x_dtype = variant == 2 ? DType::q8_0 : DType::f32;
          const std::vector<float> x = rng.normals(static_cast<size_t>(rows * p.x_stride));
          const std::vector<unsigned char> w = test::random_blocks(rng, wdt, out * in);
          const std::vector<float> bias = variant == 1 ? rng.normals(static_cast<size_t>(out)) : std::vector<float>{};
          const std::vector<float> y0 = rng.normals(static_cast<size_t>(rows * p.y_stride));
          DeviceBuffer dx = test::upload(x), dw = test::upload(w), db = test::upload(bias), dy = test::upload(y0);
          p.x = static_cast<const float*>(dx.data());
          p.w = dw.data();
          p.bias = bias.empty() ? nullptr : static_cast<const float*>(db.data());
          p.y = static_cast<float*>(dy.data());
          const Backend b = test::backend_under_test();
          if (!op_table(b, "matmul").takes_weights(wdt)) {
            CHECK_THROWS_WITH_AS(matmul(b, p),
                                 doctest::Contains(fmt::format("has no product for weights of dtype {}", to_string(wdt)).c_str()),
                                 InputError);
            continue;
          }
          if (variant == 2 && !op_table(b, "matmul").q8_0_activations) {
            CHECK_THROWS_WITH_AS(matmul(b, p), doctest::Contains("takes no activations quantised to q8_0"), InputError);
            continue;
          }
          std::vector<float> want = y0;
          MatmulParams hp = p;
          hp.x = x.data(), hp.w = w.data(), hp.bias = bias.empty() ? nullptr : bias.data(), hp.y = want.data();
          matmul(Backend::reference, hp);
          matmul(b, p);
          const std::vector<float> got = test::download<float>(dy, y0.size());
          CHECK(matmul_error(p, x, w, bias, y0, got, want) <= 2e-5);
          for (int64_t r = 0; r < rows; ++r)
            for (int64_t o = out; o < p.y_stride; ++o)
              CHECK(got[static_cast<size_t>(r * p.y_stride + o)] == y0[static_cast<size_t>(r * p.y_stride + o)]);
          // Each row alone, from the same y it started from.
          bool alone_equal = true;
          for (int64_t r = 0; r < rows; ++r) {
            const std::vector<float> xr(x.begin() + r * p.x_stride, x.begin() + (r + 1) * p.x_stride);
            const std::vector<float> yr0(y0.begin() + r * p.y_stride, y0.begin() + (r + 1) * p.y_stride);
            DeviceBuffer dxr = test::upload(xr), dyr = test::upload(yr0);
            MatmulParams one = p;
            one.rows = 1;
            one.x = static_cast<const float*>(dxr.data());
            one.y = static_cast<float*>(dyr.data());
            matmul(b, one);
            const std::vector<float> alone = test::download<float>(dyr, yr0.size());
            for (int64_t o = 0; o < out; ++o)
              alone_equal = alone_equal && alone[static_cast<size_t>(o)] == got[static_cast<size_t>(r * p.y_stride + o)];
          }
          CHECK(alone_equal);
        }
}
