// layer_norm on the backend under test (on_backend.h) against the reference:
// with and without weight and bias, odd and real widths, in place too. A
// backend whose table has no body for it refuses it by name (op_table.h),
// which is what is checked there.
//
// Tolerance: the mean and variance in f32 or double against the
// reference's: 1e-5 relative, 1e-6 absolute near zero.
#include <doctest/doctest.h>

#include <cmath>
#include <vector>

#include "core/errors.h"
#include "kernels/op_table.h"
#include "kernels/ops.h"
#include "on_backend.h"

using namespace mstar;
using namespace mstar::kernels;

TEST_CASE("layer_norm: with and without weight and bias, rows 1 and 17, odd and real widths, in place too") {
  const Backend b = test::backend_under_test();
  if (op_table(b, "layer_norm").layer_norm == nullptr) {
    DeviceBuffer x(test::memory(), sizeof(float));
    CHECK_THROWS_WITH_AS(layer_norm(b, {1, 1, test::as<float>(x), nullptr, nullptr, 1e-5, test::as<float>(x), 1}),
                         doctest::Contains("has no body for it"), InputError);
    return;
  }
  for (int64_t rows : {1, 17})
    for (int64_t width : {17, 54, 97, 1024})
      for (bool affine : {false, true}) {
        CAPTURE(rows);
        CAPTURE(width);
        CAPTURE(affine);
        test::Rng rng(static_cast<uint64_t>(rows * width) + affine);
        const std::vector<float> x = rng.normals(static_cast<size_t>(rows * width));
        const std::vector<float> w = rng.normals(static_cast<size_t>(width)),
                                 bias = rng.normals(static_cast<size_t>(width));
        std::vector<float> want(x.size());
        layer_norm(Backend::reference, {rows, width, x.data(), affine ? w.data() : nullptr,
                                        affine ? bias.data() : nullptr, 1e-5, want.data(), 1});
        DeviceBuffer dx = test::upload(x), dw = test::upload(w), dbias = test::upload(bias),
                     dout(test::memory(), x.size() * sizeof(float));
        for (bool in_place : {false, true}) {
          float* out = in_place ? test::as<float>(dx) : test::as<float>(dout);
          layer_norm(b, {rows, width, test::as<float>(dx), affine ? test::as<float>(dw) : nullptr,
                         affine ? test::as<float>(dbias) : nullptr, 1e-5, out, 2});
          const std::vector<float> got = test::download<float>(in_place ? dx : dout, x.size());
          for (size_t i = 0; i < got.size(); ++i)
            CHECK(std::fabs(got[i] - want[i]) <= 1e-5f * std::fabs(want[i]) + 1e-6f);
        }
      }
}
