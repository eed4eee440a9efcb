// lerp on the backend under test (on_backend.h) against the reference, bit
// for bit.
#include <doctest/doctest.h>

#include <vector>

#include "kernels/ops.h"
#include "on_backend.h"

using namespace mstar;
using namespace mstar::kernels;

TEST_CASE("lerp: 1003 values a quarter of the way and more, bit for bit") {
  test::Rng rng(6);
  const int64_t n = 1003;
  const std::vector<float> a = rng.normals(static_cast<size_t>(n)), b = rng.normals(static_cast<size_t>(n));
  for (float t : {0.0f, 0.37f, 1.0f}) {
    CAPTURE(t);
    std::vector<float> want = a;
    lerp(Backend::reference, {n, want.data(), b.data(), t});
    DeviceBuffer da = test::upload(a), db = test::upload(b);
    lerp(test::backend_under_test(), {n, test::as<float>(da), test::as<float>(db), t});
    CHECK(test::download<float>(da, a.size()) == want);
  }
}
