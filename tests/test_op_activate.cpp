// activate on the backend under test (on_backend.h) against the reference:
// SiLU, GELU and GELU-tanh, plain and gated, over the tails. A backend whose
// table has no body for it refuses it by name (op_table.h), which is what
// is checked there.
//
// Tolerance: the backend's exp, erf and tanh against the reference's, a few
// ulps each: 1e-6 relative, 1e-30 absolute.
#include <doctest/doctest.h>

#include <cmath>
#include <vector>

#include "core/errors.h"
#include "kernels/op_table.h"
#include "kernels/ops.h"
#include "on_backend.h"

using namespace mstar;
using namespace mstar::kernels;

TEST_CASE("activate: silu, gelu and gelu_tanh, plain and gated, over the tails, against the reference") {
  const Backend b = test::backend_under_test();
  if (op_table(b, "activate").activate == nullptr) {
    DeviceBuffer a(test::memory(), sizeof(float));
    CHECK_THROWS_WITH_AS(activate(b, {1, test::as<float>(a), nullptr, Activation::silu, 1}),
                         doctest::Contains("has no body for it"), InputError);
    return;
  }
  test::Rng rng(12);
  const int64_t n = 1003;
  std::vector<float> x = rng.normals(static_cast<size_t>(n));
  for (size_t i = 0; i < 20; ++i) x[i] *= 30.0f;  // the tails
  const std::vector<float> gate = rng.normals(static_cast<size_t>(n));
  for (Activation act : {Activation::silu, Activation::gelu, Activation::gelu_tanh})
    for (bool gated : {false, true}) {
      CAPTURE(activation_name(act));
      CAPTURE(gated);
      std::vector<float> want = x;
      activate(Backend::reference, {n, want.data(), gated ? gate.data() : nullptr, act, 1});
      DeviceBuffer da = test::upload(x), dgate = test::upload(gate);
      activate(b, {n, test::as<float>(da), gated ? test::as<float>(dgate) : nullptr, act, 2});
      const std::vector<float> got = test::download<float>(da, x.size());
      for (size_t i = 0; i < got.size(); ++i) CHECK(std::fabs(got[i] - want[i]) <= 1e-6f * std::fabs(want[i]) + 1e-30f);
    }
}
