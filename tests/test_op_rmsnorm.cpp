// rmsnorm on the backend under test (on_backend.h) against the reference:
// rows 1, 3, 17 at odd and real widths, in place too.
//
// Tolerance: the sum of squares in f32 (double in the reference): 1e-5
// relative.
#include <doctest/doctest.h>

#include <cmath>
#include <vector>

#include "kernels/ops.h"
#include "on_backend.h"

using namespace mstar;
using namespace mstar::kernels;

TEST_CASE("rmsnorm: rows 1, 3, 17 at odd and real widths, in place too") {
  for (int64_t rows : {1, 3, 17})
    for (int64_t width : {17, 54, 97, 64, 128, 4096}) {
      CAPTURE(rows);
      CAPTURE(width);
      test::Rng rng(static_cast<uint64_t>(rows * width));
      const std::vector<float> x = rng.normals(static_cast<size_t>(rows * width)),
                               w = rng.normals(static_cast<size_t>(width));
      std::vector<float> want(x.size());
      rmsnorm_reference({rows, width, x.data(), w.data(), 1e-6, want.data(), 1});
      DeviceBuffer dx = test::upload(x), dw = test::upload(w), dout(test::memory(), x.size() * sizeof(float));
      for (bool in_place : {false, true}) {
        if (in_place) test::memory().copy_from_host(dx.data(), x.data(), x.size() * sizeof(float));
        float* out = in_place ? static_cast<float*>(dx.data()) : static_cast<float*>(dout.data());
        rmsnorm(test::backend_under_test(), {rows, width, static_cast<const float*>(dx.data()),
                                             static_cast<const float*>(dw.data()), 1e-6, out, 1});
        const std::vector<float> got = test::download<float>(in_place ? dx : dout, x.size());
        for (size_t i = 0; i < got.size(); ++i)
          CHECK(std::fabs(got[i] - want[i]) <= 1e-5f * std::fabs(want[i]) + 1e-7f);
      }
    }
}
