// add_rows on the backend under test (on_backend.h) against the reference,
// bit for bit: one added row per 1, 3 and 17 rows.
#include <doctest/doctest.h>

#include <vector>

#include "kernels/ops.h"
#include "on_backend.h"

using namespace mstar;
using namespace mstar::kernels;

TEST_CASE("add_rows: 17 rows of 54, one added row per 1, 3 and 17 of them, bit for bit") {
  test::Rng rng(5);
  const int64_t rows = 17, width = 54;
  for (int64_t group : {1, 3, 17}) {
    CAPTURE(group);
    const std::vector<float> x = rng.normals(static_cast<size_t>(rows * width));
    const std::vector<float> y = rng.normals(static_cast<size_t>((rows + group - 1) / group * width));
    std::vector<float> want = x;
    add_rows(Backend::reference, {rows, width, group, want.data(), y.data()});
    DeviceBuffer dx = test::upload(x), dy = test::upload(y);
    add_rows(test::backend_under_test(), {rows, width, group, test::as<float>(dx), test::as<float>(dy)});
    CHECK(test::download<float>(dx, x.size()) == want);
  }
}
