// embed on the backend under test (on_backend.h) against the reference, bit
// for bit: tables in f32, f16 and bf16, ids repeated and at both ends.
#include <doctest/doctest.h>

#include <vector>

#include "kernels/ops.h"
#include "on_backend.h"

using namespace mstar;
using namespace mstar::kernels;

TEST_CASE("embed: tables in every dtype, ids repeated and at both ends, bit for bit") {
  test::Rng rng(8);
  for (DType dt : {DType::f32, DType::f16, DType::bf16}) {
    CAPTURE(to_string(dt));
    const int64_t vocab = 50, width = 17;
    const std::vector<unsigned char> table = test::random_values(rng, dt, vocab * width);
    const std::vector<int32_t> ids{49, 0, 7, 7, 23, 1};
    std::vector<float> want(ids.size() * static_cast<size_t>(width));
    embed(Backend::reference, {6, width, ids.data(), table.data(), dt, want.data()});
    DeviceBuffer dtable = test::upload(table), di = test::upload(ids),
                 dout(test::memory(), want.size() * sizeof(float));
    embed(test::backend_under_test(), {6, width, test::as<int32_t>(di), dtable.data(), dt, test::as<float>(dout)});
    CHECK(test::download<float>(dout, want.size()) == want);
  }
}
