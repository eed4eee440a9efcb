// A block-quantised dtype defined here and nowhere else, registered as one
// row of the dtype traits, flows through a weights file, the memory plan and
// the reference backend's product without any other file knowing it: the
// seam an embedder's type plugs into (ggml's block types are built-in rows:
// core/ggml_blocks.h).
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <random>
#include <vector>

#include <fmt/format.h>

#include "config/deployment.h"
#include "config/memory_plan.h"
#include "core/dtype.h"
#include "core/errors.h"
#include "kernels/ops.h"
#include "models/params.h"
#include "models/weights.h"
#include "temp_dir.h"

using namespace mstar;

namespace {

// 32 values share one f32 scale and are stored as int8: q = round(x /
// scale), scale = max |x| / 127 (0 for a block of zeros). 36 bytes a block.
constexpr int64_t kBlock = 32, kBlockBytes = 4 + kBlock;

void q_to_f32(const void* src, float* dst, int64_t n) {
  const auto* b = static_cast<const unsigned char*>(src);
  for (int64_t at = 0; at < n; at += kBlock, b += kBlockBytes) {
    float scale;
    std::memcpy(&scale, b, 4);
    for (int64_t i = 0; i < kBlock; ++i) dst[at + i] = static_cast<float>(static_cast<int8_t>(b[4 + i])) * scale;
  }
}

void q_from_f32(const float* src, void* dst, int64_t n) {
  auto* b = static_cast<unsigned char*>(dst);
  for (int64_t at = 0; at < n; at += kBlock, b += kBlockBytes) {
    float amax = 0;
    for (int64_t i = 0; i < kBlock; ++i) amax = std::max(amax, std::fabs(src[at + i]));
    const float scale = amax / 127.0f;
    std::memcpy(b, &scale, 4);
    for (int64_t i = 0; i < kBlock; ++i)
      b[4 + i] = static_cast<unsigned char>(static_cast<int8_t>(scale > 0 ? std::lround(src[at + i] / scale) : 0));
  }
}

DType q_type() {
  static const DType t = register_dtype({"test_q8x32", "", "TEST_Q8X32", kBlock, kBlockBytes, q_to_f32, q_from_f32});
  return t;
}

const char* kManifest = R"(name: t
kind: tts
architecture:
  layers: 2
  width: 128
  heads: 2
  kv_heads: 1
  head_dim: 64
  mlp_width: 256
  vocab_size: 64
  end_token: 63
weights:
  WEIGHTS
resources:
  - resource_key: voice_kv
    type: bounded_kv
    nodes: attn.*
    config:
      rows_per_request: 1
      max_source_len: 40
      retention: {sink: 4, window: 16}
)";

std::optional<ResolvedDeployment> resolve(const test::TempDir& dir, const std::string& weights, std::string& errors,
                                          int64_t mlp_width = 256) {
  std::string m = kManifest;
  m.replace(m.find("WEIGHTS"), 7, weights);
  m.replace(m.find("mlp_width: 256"), 14, fmt::format("mlp_width: {}", mlp_width));
  dir.write("m.yaml", m);
  dir.write("c.yaml", "model: m.yaml\nbackend: reference\nresources:\n  voice_kv: {max_slots: 2}\n");
  Diagnostics d;
  auto r = resolve_deployment(dir.path / "c.yaml", {}, d);
  errors = d.str();
  return r;
}

}  // namespace

TEST_CASE("a block dtype is one row of the traits: sizes, spellings, conversion") {
  const DType q = q_type();
  CHECK(to_string(q) == "test_q8x32");
  CHECK(parse_dtype("test_q8x32") == q);
  CHECK(find_safetensors_dtype("TEST_Q8X32") == q);
  CHECK(!find_safetensors_dtype("test_q8x32"));  // a header spells it its own way
  CHECK(row_bytes(q, 64) == 72);
  CHECK(row_bytes(DType::bf16, 17) == 34);
  CHECK(fits_blocks(q, 96));
  CHECK(!fits_blocks(q, 97));
  CHECK(!is_element_type(q));
  CHECK_THROWS_AS(register_dtype({"test_q8x32", "", "", 32, 36, q_to_f32, q_from_f32}), ConfigError);
  CHECK_THROWS_AS(register_dtype({"other", "", "F16", 1, 2, q_to_f32, nullptr}), ConfigError);

  // f32 -> q -> f32 loses at most half a step of each block's scale.
  std::vector<float> x(64), back(64);
  for (size_t i = 0; i < x.size(); ++i) x[i] = std::sin(static_cast<float>(i)) * (i < 32 ? 1.0f : 100.0f);
  std::vector<unsigned char> stored(row_bytes(q, 64));
  convert(x.data(), DType::f32, stored.data(), q, 64);
  convert(stored.data(), q, back.data(), DType::f32, 64);
  for (size_t i = 0; i < x.size(); ++i) CHECK(std::fabs(back[i] - x[i]) <= (i < 32 ? 1.0f : 100.0f) / 127 / 2 * 1.0001f);
  // A non-finite value is found through to_f32, by its index.
  std::vector<float> bad(x);
  bad[40] = INFINITY;
  convert(bad.data(), DType::f32, stored.data(), q, 64);
  CHECK(first_non_finite(stored.data(), q, 64) == std::optional<std::size_t>(32));  // the block's scale is infinite
  CHECK(std::isnan(element_as_f32(stored.data(), q, 40)));
  CHECK(element_as_f32(stored.data(), q, 3) == back[3]);
  // The parser lists every type in the table.
  CHECK_THROWS_WITH_AS(parse_dtype("nonesuch", "kv_dtype"),
                       doctest::Contains("unknown dtype 'nonesuch' (expected f32, f16, bf16"), ConfigError);
}

TEST_CASE("a block dtype flows through a weights file, the memory plan and the reference product") {
  const DType q = q_type();
  test::TempDir dir;
  std::string errors;
  // The architecture's tensors, then a file of them in the block type.
  const auto dummy = resolve(dir, "dummy_seed: 3", errors);
  REQUIRE_MESSAGE(dummy, errors);
  const std::vector<TensorSpec> specs = dummy->model.arch->tensors();
  const Weights made = Weights::dummy(specs, 3);
  write_weights(made, specs, dir / "w.safetensors", q);

  const auto r = resolve(dir, "{file: w.safetensors, dtype: test_q8x32}", errors);
  REQUIRE_MESSAGE(r, errors);
  std::size_t want = 0;
  for (const TensorSpec& t : specs) want += static_cast<std::size_t>(t.numel()) / 32 * 36;
  CHECK(r->model.weights_bytes == want);
  const auto plan = memory_plan_json(*r);
  CHECK(plan["totals"]["weights_bytes"].get<std::size_t>() == want);

  const Weights w = r->model.load_weights(Backend::reference);
  const WeightTensor& head = w.get("head.weight");  // [64, 128]
  CHECK(head.dtype == q);
  CHECK(head.bytes == row_bytes(q, 64 * 128));

  // y = x . head^T read as stored, against the same weights widened to f32
  // first (the same bits: both convert through to_f32) and against the
  // unquantised weights (within the quantisation's error).
  ModelParams params(w, Backend::reference);
  const int64_t rows = 3, in = 128, out = 64;
  std::mt19937 g(1);
  std::normal_distribution<float> nd;
  std::vector<float> x(static_cast<size_t>(rows * in)), y(static_cast<size_t>(rows * out)), y32(y.size()),
      y_made(y.size());
  for (float& v : x) v = nd(g);
  auto product = [&](const void* weights, DType dt, std::vector<float>& into) {
    kernels::MatmulParams p;
    p.rows = rows, p.in = in, p.out = out, p.x = x.data(), p.x_stride = in, p.w = weights, p.w_dtype = dt;
    p.y = into.data(), p.y_stride = out;
    kernels::matmul(Backend::reference, p);
  };
  product(params.get("head.weight", q), q, y);
  product(params.f32("head.weight"), DType::f32, y32);
  product(made.get("head.weight").data, DType::f32, y_made);
  CHECK(std::memcmp(y.data(), y32.data(), y.size() * sizeof(float)) == 0);
  double scale = 0;
  for (float v : y_made) scale = std::max(scale, std::fabs(static_cast<double>(v)));
  for (size_t i = 0; i < y.size(); ++i) CHECK(std::fabs(y[i] - y_made[i]) <= 0.02 * scale + 1e-3);

  // A backend without a body for the type says so, naming it.
  kernels::MatmulParams p;
  p.rows = rows, p.in = in, p.out = out, p.x = x.data(), p.x_stride = in, p.w = params.get("head.weight", q);
  p.w_dtype = q, p.y = y.data(), p.y_stride = out;
  CHECK_THROWS_WITH_AS(kernels::matmul(Backend::cpu, p),
                       "matmul: the cpu backend has no product for weights of dtype test_q8x32", InputError);
  // Rows that are not whole blocks are refused before anything is read.
  p.in = 100, p.x_stride = 100;
  CHECK_THROWS_WITH_AS(kernels::matmul(Backend::reference, p),
                       "matmul: weights of dtype test_q8x32 come in blocks of 32, which do not divide in = 100",
                       InputError);

  // A manifest whose tensors' rows are not whole blocks is refused by name.
  CHECK(resolve(dir, "{dummy_seed: 3, dtype: test_q8x32}", errors));
  CHECK(!resolve(dir, "{dummy_seed: 3, dtype: test_q8x32}", errors, 100));
  CHECK(errors.find("weights.dtype: test_q8x32's blocks of 32 do not divide tensor") != std::string::npos);
  CHECK(errors.find("rows of 100") != std::string::npos);
}
