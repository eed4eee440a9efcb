// A family defined here alone, composed from the model blocks: mstar's tts
// architecture with layer norms that add a bias and a plain feed-forward
// block with GELU (tanh form), a mix no shipped family uses. It registers
// with register_family and the Engine serves it like any other: the seam a
// new family plugs into, one file and one registration.
#include <doctest/doctest.h>

#include <cmath>
#include <map>
#include <vector>

#include <fmt/format.h>

#include "core/errors.h"
#include "engine/engine.h"
#include "models/common_architecture.h"
#include "models/decoder_lm.h"
#include "models/families/tts.h"
#include "kernels/op_table.h"
#include "kernels/ops.h"
#include "kernels/rope.h"
#include "deployments.h"
#include "temp_dir.h"

using namespace mstar;
using nlohmann::json;

namespace {

class LnGeluArchitecture final : public Architecture {
 public:
  LnGeluArchitecture(CommonArchitecture c, TtsFields t) : common(c), tts(t), shape_(c.trunk()) {
    shape_.norm = NormKind::layer;
    shape_.norm_bias = true;
    shape_.norm_eps = 1e-5;
    shape_.mlp = {false, kernels::Activation::gelu_tanh};
  }
  const TrunkShape& trunk() const override { return shape_; }
  std::vector<TensorSpec> tensors() const override {
    const auto& c = common;
    std::vector<TensorSpec> t{{"embed.weight", {tts.vocab_size, c.width}}};
    for (int64_t l = 0; l < c.layers; ++l) {
      const TrunkNames n = names(l);
      for (const std::string* norm : {&n.attn_norm, &n.attn_norm_bias, &n.mlp_norm, &n.mlp_norm_bias})
        t.push_back({*norm, {c.width}});
      t.push_back({n.q, {c.heads * c.head_dim, c.width}});
      t.push_back({n.k, {c.kv_heads * c.head_dim, c.width}});
      t.push_back({n.v, {c.kv_heads * c.head_dim, c.width}});
      t.push_back({n.o, {c.width, c.heads * c.head_dim}});
      t.push_back({n.up, {c.mlp_width, c.width}});
      t.push_back({n.down, {c.width, c.mlp_width}});
    }
    t.push_back({"final_norm.weight", {c.width}});
    t.push_back({"final_norm.bias", {c.width}});
    t.push_back({"head.weight", {tts.vocab_size, c.width}});
    return t;
  }
  json to_json() const override { return common_json(common); }
  int64_t vocab_size() const override { return tts.vocab_size; }

  // mstar's own names, with the norms' biases beside their weights and no gate.
  static TrunkNames names(int64_t l) {
    TrunkNames n = inhouse_names(l);
    n.gate.clear();
    n.attn_norm_bias = fmt::format("layers.{}.attn_norm.bias", l);
    n.mlp_norm_bias = fmt::format("layers.{}.mlp_norm.bias", l);
    return n;
  }

  CommonArchitecture common;
  TtsFields tts;

 private:
  TrunkShape shape_;
};

void register_ln_gelu() {
  static const bool registered = [] {
    ModelFamily f;
    f.name = "test_ln_gelu";
    f.task = "speech";
    f.resource_type = "bounded_kv";
    f.summary = "a test's decoder: layer norms with biases, a plain GELU-tanh feed-forward block";
    f.read_architecture = [](ArchitectureInput& in) -> std::unique_ptr<Architecture> {
      CommonArchitecture c;
      TtsFields t;
      const bool common_ok = read_common_architecture(*in.fields, c);
      if (!read_declared(*in.fields, t) || !common_ok) return nullptr;
      return std::make_unique<LnGeluArchitecture>(c, t);
    };
    f.make = [](const Architecture& a, const Weights& w, const ModelOptions& o) -> std::unique_ptr<Model> {
      const auto& arch = dynamic_cast<const LnGeluArchitecture&>(a);
      DecoderSpec spec;
      spec.shape = arch.trunk();
      spec.names = LnGeluArchitecture::names;
      spec.final_norm = "final_norm.weight";
      spec.final_norm_bias = "final_norm.bias";
      spec.embed = "embed.weight";
      spec.head = "head.weight";
      spec.matrix_dtype = DType::f32;
      spec.inv_freq = rope_inv_freq(static_cast<int32_t>(arch.common.head_dim), 10000.0);
      spec.vocab = arch.tts.vocab_size;
      spec.end_tokens = {static_cast<int32_t>(arch.tts.end_token)};
      return std::make_unique<DecoderLM>(a, std::move(spec), w, o);
    };
    register_family(std::move(f));
    return true;
  }();
  (void)registered;
}

const char* kManifest = R"(name: ln-gelu
kind: KIND
architecture:
  layers: 2
  width: 64
  heads: 2
  kv_heads: 1
  head_dim: 32
  mlp_width: 96
  vocab_size: 97
  end_token: 96
weights:
  dummy_seed: 11
resources:
  - resource_key: voice_kv
    type: bounded_kv
    nodes: attn.*
    config:
      rows_per_request: 1
      max_source_len: 16
      retention: {sink: 2, window: 14}
      max_slots: 2
)";

// The greedy tokens of two requests served together by `kind` on `backend`.
std::map<std::string, std::vector<int32_t>> serve(const std::string& kind, const std::string& backend) {
  test::TempDir dir;
  std::string m = kManifest;
  m.replace(m.find("KIND"), 4, kind);
  dir.write("m.yaml", m);
  dir.write("c.yaml", "model: m.yaml\nbackend: " + backend +
                          "\nthreads: 2\nworkload:\n  voices:\n    alice: {seed: 1, length: 6}\n  requests:\n    count: 0\n"
                          "    voices: [alice]\n    prompt_tokens: 3\n    max_tokens: 4\n");
  auto engine = Engine::create(test::load_or_fail(dir.path / "c.yaml"));
  for (const char* id : {"a", "b"})
    engine->submit(json{{"id", id}, {"voice", "alice"}, {"prompt", {5, 6, id[0] == 'a' ? 7 : 8}}, {"max_tokens", 24},
                        {"sampling", {{"temperature", 0.0}}}});
  return test::streamed_tokens(*engine);
}

}  // namespace

TEST_CASE("a family defined in a test from blocks (layer norm with bias, plain GELU-tanh) runs through the Engine") {
  register_ln_gelu();
  const ModelFamily* f = find_family("test_ln_gelu");
  REQUIRE(f);
  CHECK_THROWS_AS(register_family(*f), ConfigError);  // a name is registered once

  // Both requests, batched, to their last token on either host backend
  // (their products sum in other orders, so near-ties may draw apart: the
  // blocks' arithmetic is checked against the definitions below), and the
  // same tokens again on a second run.
  const auto ref = serve("test_ln_gelu", "reference");
  const auto cpu = serve("test_ln_gelu", "cpu");
  REQUIRE(ref.size() == 2);
  REQUIRE(cpu.size() == 2);
  // A stream ends at its 24th token or at the end token.
  const auto whole = [](const std::vector<int32_t>& t) { return t.size() == 24 || (!t.empty() && t.back() == 96); };
  for (const char* id : {"a", "b"}) {
    CHECK(whole(ref.at(id)));
    CHECK(whole(cpu.at(id)));
  }
  CHECK(serve("test_ln_gelu", "cpu") == cpu);
  // Its blocks are what it runs: the tts family over the same manifest (RMS
  // norms, SwiGLU) draws other tokens.
  CHECK(serve("tts", "cpu") != cpu);
}

TEST_CASE("the block ops: layer norm and the activations against their definitions, on every host backend") {
  const int64_t rows = 3, width = 17;
  std::vector<float> x(static_cast<size_t>(rows * width)), w(static_cast<size_t>(width)), b(w.size());
  for (size_t i = 0; i < x.size(); ++i) x[i] = static_cast<float>(std::sin(0.7 * static_cast<double>(i)) * 3);
  for (size_t i = 0; i < w.size(); ++i) w[i] = 0.5f + 0.1f * static_cast<float>(i), b[i] = -0.2f * static_cast<float>(i);
  for (Backend be : kernels::built_backends()) {
    if (!kernels::op_table(be, "test").host_memory) continue;
    std::vector<float> out(x.size());
    kernels::layer_norm(be, {rows, width, x.data(), w.data(), b.data(), 1e-5, out.data(), 1});
    for (int64_t r = 0; r < rows; ++r) {
      double mean = 0, var = 0;
      for (int64_t i = 0; i < width; ++i) mean += x[static_cast<size_t>(r * width + i)];
      mean /= width;
      for (int64_t i = 0; i < width; ++i) var += std::pow(x[static_cast<size_t>(r * width + i)] - mean, 2);
      var /= width;
      for (int64_t i = 0; i < width; ++i) {
        const auto at = static_cast<size_t>(r * width + i);
        const double want = (x[at] - mean) / std::sqrt(var + 1e-5) * w[static_cast<size_t>(i)] + b[static_cast<size_t>(i)];
        CHECK(out[at] == doctest::Approx(want).epsilon(1e-6));
      }
    }
    for (kernels::Activation act : {kernels::Activation::silu, kernels::Activation::gelu, kernels::Activation::gelu_tanh}) {
      std::vector<float> a(x), gated(x), gate(x.size());
      for (size_t i = 0; i < gate.size(); ++i) gate[i] = 0.25f * static_cast<float>(i % 5) - 0.5f;
      kernels::activate(be, {static_cast<int64_t>(a.size()), a.data(), nullptr, act, 1});
      kernels::activate(be, {static_cast<int64_t>(gated.size()), gated.data(), gate.data(), act, 1});
      for (size_t i = 0; i < x.size(); ++i) {
        const double v = x[i];
        const double want = act == kernels::Activation::silu   ? v / (1 + std::exp(-v))
                            : act == kernels::Activation::gelu ? 0.5 * v * std::erfc(-v / std::sqrt(2.0))
                                                               : 0.5 * v * (1 + std::tanh(0.7978845608028654 * (v + 0.044715 * v * v * v)));
        CHECK(a[i] == doctest::Approx(want).epsilon(1e-6));
        CHECK(gated[i] == doctest::Approx(want * gate[i]).epsilon(1e-6));
      }
    }
  }
}
