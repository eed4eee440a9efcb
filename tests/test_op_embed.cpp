// embed on the backend under test (on_backend.h) against the reference, bit
// for bit: tables in f32, f16 and bf16, ids repeated and at both ends; tables
// of ggml's block types against their rows widened by the type itself.
#include <doctest/doctest.h>

#include <vector>

#include "core/errors.h"
#include "kernels/op_table.h"
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

TEST_CASE("embed: tables of ggml's block types give each row as the type widens it, or are refused by name") {
  test::Rng rng(9);
  for (DType dt : {DType::q8_0, DType::q4_0, DType::q4_k, DType::q5_k, DType::q6_k}) {
    CAPTURE(to_string(dt));
    const int64_t vocab = 17, width = 256;
    const std::vector<unsigned char> table = test::random_blocks(rng, dt, vocab * width);
    const std::vector<int32_t> ids{16, 0, 7, 7, 3};
    std::vector<float> want(ids.size() * static_cast<size_t>(width));
    for (size_t t = 0; t < ids.size(); ++t)
      dtype_traits(dt).to_f32(table.data() + row_bytes(dt, ids[t] * width), want.data() + t * width, width);
    DeviceBuffer dtable = test::upload(table), di = test::upload(ids),
                 dout(test::memory(), want.size() * sizeof(float));
    const EmbedParams p{5, width, test::as<int32_t>(di), dtable.data(), dt, test::as<float>(dout)};
    if (!op_table(test::backend_under_test(), "embed").takes_weights(dt)) {
      CHECK_THROWS_WITH_AS(embed(test::backend_under_test(), p), doctest::Contains("reads no table of dtype"),
                           InputError);
      continue;
    }
    embed(test::backend_under_test(), p);
    CHECK(test::download<float>(dout, want.size()) == want);
  }
  // A width that is not whole blocks is refused by the dispatcher, whatever the backend.
  std::vector<unsigned char> table(row_bytes(DType::q8_0, 64));
  std::vector<int32_t> ids{0};
  std::vector<float> out(48);
  CHECK_THROWS_WITH_AS(embed(Backend::reference, {1, 48, ids.data(), table.data(), DType::q8_0, out.data()}),
                       doctest::Contains("a table of dtype q8_0 comes in blocks of 32, which do not divide width = 48"),
                       InputError);
}
