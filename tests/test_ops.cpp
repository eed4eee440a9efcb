// The cpu backend's rope against the reference: the same arithmetic, bit for
// bit; the dispatcher's checks of the matrix product's activations; products
// run as a group against one call each. (The
// per-instruction-set ops are in test_ops_isa.cpp.)
#include <doctest/doctest.h>

#include <algorithm>
#include <cstring>
#include <string>
#include <vector>

#include "core/errors.h"
#include "kernels/ops.h"
#include "kernels/rope.h"
#include "backends.h"
#include "support.h"

using namespace mstar;
using namespace mstar::kernels;

namespace {

// What an op refuses on the cuda backend: what its table declares it does
// not take, or, in a build without it, the backend itself.
std::string cuda_says(const std::string& op, const std::string& what) {
  const auto built = kernels::built_backends();
  return std::find(built.begin(), built.end(), Backend::cuda) != built.end()
             ? op + ": " + what
             : op + ": backend 'cuda' is not built into this binary";
}

}  // namespace

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

TEST_CASE("matmul: activations are f32, bf16 or q8_0 (block-type weights), and only f32 on cuda") {
  const std::vector<float> x(4, 1.0f), w(8, 1.0f);
  std::vector<float> y(2);
  MatmulParams p;
  p.rows = 1, p.in = 4, p.out = 2;
  p.x = x.data(), p.x_stride = 4;
  p.w = w.data(), p.w_dtype = DType::f32;
  p.y = y.data(), p.y_stride = 2;
  p.x_dtype = DType::f16;
  CHECK_THROWS_WITH_AS(matmul(Backend::cpu, p),
                       "matmul: activations are rounded to f32 or bf16 or quantised to q8_0, got f16", InputError);
  p.x_dtype = DType::q8_0;
  CHECK_THROWS_WITH_AS(matmul(Backend::cpu, p),
                       "matmul: activations quantised to q8_0 go with weights of a block type, not f32", InputError);
  CHECK_THROWS_WITH_AS(matmul(Backend::cuda, p),
                       cuda_says("matmul", "the cuda backend takes no activations quantised to q8_0").c_str(), InputError);
  p.x_dtype = DType::bf16;
  CHECK_THROWS_WITH_AS(matmul(Backend::cuda, p),
                       cuda_says("matmul", "the cuda backend takes no activations rounded to bf16").c_str(), InputError);
  matmul(Backend::cpu, p);
  CHECK(y == std::vector<float>{4.0f, 4.0f});
}

// A matrix as pair panels (weight_layout.h): every element where
// pair_panel_index says, the rearrangement undone exactly, the reference's
// product the same bits as over rows, the embedding lookup the same rows;
// what cannot be so laid out refused.
TEST_CASE("weight layouts: pair panels hold the same matrix, and products refuse what cannot be so laid out") {
  test::Rng rng(11);
  for (auto [out, in] : {std::pair<int64_t, int64_t>{17, 54}, {97, 128}, {64, 2}, {130, 6}}) {
    CAPTURE(out);
    CAPTURE(in);
    const std::vector<float> v = rng.normals(static_cast<size_t>(out * in));
    std::vector<uint16_t> w(v.size()), panels;
    for (size_t i = 0; i < v.size(); ++i) w[i] = f32_to_bf16(v[i]);
    panels = w;
    rows_to_pair_panels(panels.data(), out, in);
    if (in > 2) CHECK(panels != w);  // at width 2 a panel's pairs are its rows
    for (int64_t o = 0; o < out; ++o)
      for (int64_t k = 0; k < in; ++k)
        REQUIRE(matrix_element(panels.data(), DType::bf16, WeightLayout::pair_panels, out, in, o, k) ==
                bf16_to_f32(w[static_cast<size_t>(o * in + k)]));
    const std::vector<float> x = rng.normals(static_cast<size_t>(3 * in));
    std::vector<float> want(static_cast<size_t>(3 * out)), got(want.size());
    MatmulParams p;
    p.rows = 3, p.in = in, p.out = out;
    p.x = x.data(), p.x_stride = in;
    p.w = w.data(), p.w_dtype = DType::bf16;
    p.y = want.data(), p.y_stride = out;
    matmul(Backend::reference, p);
    p.w = panels.data(), p.w_layout = WeightLayout::pair_panels, p.y = got.data();
    matmul(Backend::reference, p);
    CHECK(got == want);
    // The embedding lookup reads a table so laid out (a tied one is also the logits' matrix).
    // Every row, in an order that crosses panels (a part panel included).
    std::vector<int32_t> ids(static_cast<size_t>(out));
    for (int64_t o = 0; o < out; ++o) ids[static_cast<size_t>(o)] = static_cast<int32_t>((o * 37) % out);
    for (Backend b : test::host_backends()) {
      std::vector<float> rows_out(static_cast<size_t>(out * in)), panels_out(rows_out.size());
      embed(b, {out, in, ids.data(), w.data(), DType::bf16, rows_out.data()});
      embed(b, {out, in, ids.data(), panels.data(), DType::bf16, panels_out.data(), WeightLayout::pair_panels, out});
      CHECK(panels_out == rows_out);
      CHECK(rows_out[static_cast<size_t>(in + 1)] == bf16_to_f32(w[static_cast<size_t>(ids[1] * in + 1)]));
    }
    pair_panels_to_rows(panels.data(), out, in);
    CHECK(panels == w);
  }
  for (Backend b : kernels::built_backends())
    if (b != Backend::cpu) CHECK(matmul_layout(b, DType::bf16, 896) == WeightLayout::rows);
  CHECK(matmul_layout(Backend::cpu, DType::f16, 896) == WeightLayout::rows);
  CHECK(matmul_layout(Backend::cpu, DType::bf16, 897) == WeightLayout::rows);

  const std::vector<uint16_t> w(8);
  const std::vector<float> x(4, 1.0f);
  std::vector<float> y(2);
  MatmulParams p;
  p.rows = 1, p.in = 4, p.out = 2;
  p.x = x.data(), p.x_stride = 4;
  p.w = w.data(), p.w_dtype = DType::f16, p.w_layout = WeightLayout::pair_panels;
  p.y = y.data(), p.y_stride = 2;
  CHECK_THROWS_WITH_AS(matmul(Backend::cpu, p),
                       "matmul: weights laid out as pair_panels must be bf16 with an even width, got f16 with width 4",
                       InputError);
  p.w_dtype = DType::bf16, p.in = 3, p.out = 2;
  CHECK_THROWS_WITH_AS(matmul(Backend::cpu, p),
                       "matmul: weights laid out as pair_panels must be bf16 with an even width, got bf16 with width 3",
                       InputError);
  p.in = 4;
  CHECK_THROWS_WITH_AS(matmul(Backend::cuda, p),
                       cuda_says("matmul", "the cuda backend reads row-major weights only").c_str(), InputError);
  const int32_t id = 1;
  std::vector<float> row(4);
  CHECK_THROWS_WITH_AS(
      embed(Backend::cpu, {1, 3, &id, w.data(), DType::bf16, row.data(), WeightLayout::pair_panels, 2}),
      "embed: a table laid out as pair_panels must be bf16 with an even width, got bf16 with width 3", InputError);
  CHECK_THROWS_WITH_AS(
      embed(Backend::cpu, {1, 4, &id, w.data(), DType::bf16, row.data(), WeightLayout::pair_panels, 0}),
      "embed: a table laid out as pair_panels needs its vocab, got 0", InputError);
  CHECK_THROWS_WITH_AS(
      embed(Backend::cuda, {1, 4, &id, w.data(), DType::bf16, row.data(), WeightLayout::pair_panels, 2}),
      cuda_says("embed", "the cuda backend reads row-major tables only").c_str(), InputError);
}

namespace {

// Three products of one x, as a layer's q, k and v: outputs of odd widths,
// a dtype each, a bias on the first, the last accumulating into y; the
// bf16 ones as pair panels where the width is even.
struct Group {
  std::vector<float> x;
  std::vector<std::vector<unsigned char>> w;
  std::vector<float> bias;
  std::vector<std::vector<float>> y0;
  std::vector<MatmulParams> ps;
  Group(int64_t rows, int64_t in, DType x_dtype, int threads, uint64_t seed) {
    test::Rng rng(seed);
    const int64_t outs[] = {97, 17, 54};
    const DType dts[] = {DType::bf16, DType::f16, DType::bf16};
    const int64_t xs = in + 3;
    x = rng.normals(static_cast<size_t>(rows * xs));
    bias = rng.normals(97);
    for (int i = 0; i < 3; ++i) {
      const std::vector<float> v = rng.normals(static_cast<size_t>(outs[i] * in));
      w.emplace_back(row_bytes(dts[i], static_cast<int64_t>(v.size())));
      for (size_t e = 0; e < v.size(); ++e) store_from_f32(w.back().data(), dts[i], e, v[e]);
      const bool panels = dts[i] == DType::bf16 && in % 2 == 0;
      if (panels) rows_to_pair_panels(reinterpret_cast<uint16_t*>(w.back().data()), outs[i], in);
      y0.push_back(rng.normals(static_cast<size_t>(rows * (outs[i] + 5))));
      MatmulParams p;
      p.rows = rows, p.in = in, p.out = outs[i];
      p.x = x.data(), p.x_stride = xs, p.x_dtype = x_dtype;
      p.w = w.back().data(), p.w_dtype = dts[i];
      p.w_layout = panels ? WeightLayout::pair_panels : WeightLayout::rows;
      p.bias = i == 0 ? bias.data() : nullptr;
      p.y_stride = outs[i] + 5, p.accumulate = i == 2;
      p.threads = threads, p.weights_outlive_call = true;
      ps.push_back(p);
    }
  }
  // Each product's y after running them with `run`, from y0.
  template <class Run>
  std::vector<std::vector<float>> outputs(Run run) {
    std::vector<std::vector<float>> y = y0;
    for (size_t i = 0; i < ps.size(); ++i) ps[i].y = y[i].data();
    run(ps);
    release_weights(Backend::cpu);  // before w goes
    return y;
  }
};

}  // namespace

// On the cpu backend, products that each take the panels as a redo job run
// as one job (matmul_cpu.cpp): every panel must reach its own product's y.
TEST_CASE("matmul_group: each product's bits as its own matmul call, on the cpu backend and the reference") {
  for (Backend b : test::host_backends())
    for (DType x_dtype : {DType::f32, DType::bf16})
      for (int64_t rows : {1, 2, 5, 17, 54})
        for (int64_t in : {17, 54, 97})
          for (int threads : {1, 2, 3}) {
            if (b == Backend::reference && (threads > 1 || rows > 5)) continue;
            CAPTURE(to_string(b));
            CAPTURE(to_string(x_dtype));
            CAPTURE(rows);
            CAPTURE(in);
            CAPTURE(threads);
            Group g(rows, in, x_dtype, threads, static_cast<uint64_t>(rows * 131 + in));
            const auto want = g.outputs([&](const std::vector<MatmulParams>& ps) {
              for (const MatmulParams& p : ps) matmul(b, p);
            });
            const auto got = g.outputs([&](const std::vector<MatmulParams>& ps) { matmul_group(b, ps.data(), 3); });
            for (size_t i = 0; i < got.size(); ++i) {
              CAPTURE(i);
              CHECK(got[i] != g.y0[i]);
              REQUIRE(std::memcmp(got[i].data(), want[i].data(), got[i].size() * sizeof(float)) == 0);
            }
          }
}

TEST_CASE("matmul_group: a product without rows is skipped, one whose weights may not outlive the call runs alone") {
  Group g(3, 97, DType::bf16, 2, 7);
  const auto want = g.outputs([](const std::vector<MatmulParams>& ps) {
    matmul(Backend::cpu, ps[0]);
    matmul(Backend::cpu, ps[2]);
  });
  const auto got = g.outputs([](std::vector<MatmulParams> ps) {
    ps[1].rows = 0;
    ps[2].weights_outlive_call = false;
    matmul_group(Backend::cpu, ps.data(), 3);
  });
  CHECK(got[1] == g.y0[1]);
  CHECK(got == want);
}

TEST_CASE("matmul_group: products that write what another reads, or too many, are refused before any runs") {
  Group g(2, 17, DType::f32, 2, 11);
  std::vector<float> y1 = g.y0[1];
  for (size_t i = 0; i < 3; ++i) g.ps[i].y = g.y0[i].data();
  g.ps[1].y = y1.data();
  std::vector<MatmulParams> ps = g.ps;
  ps[2].x = g.y0[0].data() + 10;  // reads product 0's y
  ps[2].x_stride = 17;
  CHECK_THROWS_WITH_AS(matmul_group(Backend::cpu, ps.data(), 3), "matmul_group: product 0's y overlaps product 2's x",
                       InputError);
  ps = g.ps;
  ps[2].y = y1.data() + 10;  // writes over product 1's y
  ps[2].y_stride = 17;
  ps[2].out = 17;
  CHECK_THROWS_WITH_AS(matmul_group(Backend::cpu, ps.data(), 3), "matmul_group: products 1 and 2 write overlapping y",
                       InputError);
  ps = g.ps;
  ps[1].in = 0;
  CHECK_THROWS_WITH_AS(matmul_group(Backend::reference, ps.data(), 3),
                       "matmul_group: in and out must be positive, got 0 and 17", InputError);
  ps = g.ps;
  ps.push_back(ps[0]);
  ps.push_back(ps[0]);
  CHECK_THROWS_WITH_AS(matmul_group(Backend::cpu, ps.data(), 5), "matmul_group: takes 0 to 4 products, got 5",
                       InputError);
  CHECK(y1 == g.y0[1]);  // nothing ran
  matmul_group(Backend::cpu, nullptr, 0);
}
