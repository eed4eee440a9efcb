// The cpu backend's rope against the reference: the same arithmetic, bit for
// bit; the dispatcher's checks of the matrix product's activations. (The
// per-instruction-set ops are in test_ops_isa.cpp.)
#include <doctest/doctest.h>

#include <vector>

#include "core/errors.h"
#include "ops.h"
#include "rope.h"
#include "support.h"

using namespace mstar;
using namespace mstar::kernels;

TEST_CASE("rope: the cpu backend's is the reference's arithmetic, bit for bit, one or three sections") {
  test::Rng rng(29);
  const std::vector<float> inv = rope_inv_freq(64, 10000.0);
  for (int32_t sections : {1, 3}) {
    RopeParams p;
    p.tokens = 17, p.heads = 5, p.head_dim = 64;
    p.token_stride = 5 * 64 + 3, p.head_stride = 64;
    p.sections = sections;
    if (sections == 1) {
      p.section[0] = {0, 32, inv.data()};
    } else {
      p.section[0] = {0, 16, inv.data()};
      p.section[1] = {16, 8, inv.data() + 16};
      p.section[2] = {24, 6, inv.data() + 24};  // pairs 30, 31 stay as they are
    }
    std::vector<int64_t> pos(static_cast<size_t>(p.tokens * sections));
    for (auto& v : pos) v = rng.uniform(0, 100000);
    p.positions = pos.data();
    const std::vector<float> x = rng.normals(static_cast<size_t>(p.tokens * p.token_stride));
    std::vector<float> want = x, got = x;
    p.x = want.data();
    rope_reference(p);
    p.x = got.data();
    p.threads = 2;
    rope_cpu(p);
    CHECK(got == want);
    CHECK(got != x);
  }
}

TEST_CASE("matmul: activations are f32 or bf16, and bf16 not on cuda") {
  const std::vector<float> x(4, 1.0f), w(8, 1.0f);
  std::vector<float> y(2);
  MatmulParams p;
  p.rows = 1, p.in = 4, p.out = 2;
  p.x = x.data(), p.x_stride = 4;
  p.w = w.data(), p.w_dtype = DType::f32;
  p.y = y.data(), p.y_stride = 2;
  p.x_dtype = DType::f16;
  CHECK_THROWS_WITH_AS(matmul(Backend::cpu, p), "matmul: activations are rounded to f32 or bf16, got f16", InputError);
  p.x_dtype = DType::bf16;
  CHECK_THROWS_WITH_AS(matmul(Backend::cuda, p), "matmul: the cuda backend takes f32 activations only", InputError);
  matmul(Backend::cpu, p);
  CHECK(y == std::vector<float>{4.0f, 4.0f});
}
