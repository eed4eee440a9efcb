// gather_rows on the backend under test (on_backend.h) against the
// reference, bit for bit: rows repeated, out of order.
#include <doctest/doctest.h>

#include <vector>

#include "kernels/ops.h"
#include "on_backend.h"

using namespace mstar;
using namespace mstar::kernels;

TEST_CASE("gather_rows: five of ten rows of 97, repeated and out of order, bit for bit") {
  test::Rng rng(7);
  const int64_t width = 97;
  const std::vector<float> x = rng.normals(static_cast<size_t>(10 * width));
  const std::vector<int32_t> index{9, 0, 3, 3, 7};
  std::vector<float> want(index.size() * static_cast<size_t>(width));
  gather_rows(Backend::reference, {5, width, index.data(), x.data(), want.data()});
  DeviceBuffer dx = test::upload(x), di = test::upload(index), dout(test::memory(), want.size() * sizeof(float));
  gather_rows(test::backend_under_test(),
              {5, width, test::as<int32_t>(di), test::as<float>(dx), test::as<float>(dout)});
  CHECK(test::download<float>(dout, want.size()) == want);
}
