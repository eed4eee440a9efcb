// silu_mul on the backend under test (on_backend.h) against the reference,
// the tails of exp included. Tolerance: the backend's expf against the
// reference's, a few ulps: 1e-6 relative.
#include <doctest/doctest.h>

#include <cmath>
#include <vector>

#include "kernels/ops.h"
#include "on_backend.h"

using namespace mstar;
using namespace mstar::kernels;

TEST_CASE("silu_mul: 1003 values, some far into the tails of exp, against the reference") {
  test::Rng rng(5);
  const int64_t n = 1003;
  std::vector<float> a = rng.normals(static_cast<size_t>(n)), b = rng.normals(static_cast<size_t>(n));
  for (size_t i = 0; i < 20; ++i) a[i] *= 30.0f;
  std::vector<float> want = a;
  silu_mul_reference({n, want.data(), b.data(), 1});
  DeviceBuffer da = test::upload(a), db = test::upload(b);
  silu_mul(test::backend_under_test(), {n, test::as<float>(da), test::as<float>(db), 1});
  const std::vector<float> got = test::download<float>(da, a.size());
  for (size_t i = 0; i < got.size(); ++i) CHECK(std::fabs(got[i] - want[i]) <= 1e-6f * std::fabs(want[i]) + 1e-30f);
}
