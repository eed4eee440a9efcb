// Hugging Face llama and qwen2 checkpoints against goldens from an
// independent float64 implementation (tools/hf/reference.py, written from
// the transformers definitions; docs/hf-decoders.md). Each golden folder in
// tests/data/hf/ is served through a manifest, as a user would.
//
// Tolerance on logits: 1e-5 absolute. The weights are identical in both
// (bf16 or f32 values widened exactly); mstar computes activations in f32
// with f32 KV here, the reference in float64, so the logits differ by
// float32 rounding through two layers (measured at most 1.6e-6 on both
// backends; logits are of order 1). Greedy tokens must be equal: the
// goldens' smallest top-1 margin is 0.0076, far above that.
#include <doctest/doctest.h>

#include <cstring>
#include <filesystem>
#include <fstream>

#include "bench/step_flops.h"
#include "config/manifest.h"
#include "models/families/hf_decoder.h"
#include "models/model.h"
#include "models/params.h"
#include "models/safetensors.h"
#include "resources/resource_set.h"
#include "checkpoints.h"
#include "support.h"
#include "backends.h"

using namespace mstar;
using nlohmann::json;
namespace fs = std::filesystem;

namespace {

const fs::path kData = fs::path(MSTAR_TEST_DATA) / "hf";
constexpr float kTol = 1e-5f;

using test::load;
using test::load_json;
using test::Loaded;
using test::max_diff;
using test::run_greedy;
using test::Served;

}  // namespace

TEST_CASE("hf: the goldens' checkpoints load through a manifest with their own architecture") {
  Loaded l = load(kData / "llama-gqa-bf16", "llama", "stream", 4, 12);
  REQUIRE_MESSAGE(l.manifest, l.errors);
  const auto& a = dynamic_cast<const HfArchitecture&>(*l.manifest->arch);
  CHECK(a.shape.width == 64);
  CHECK(a.shape.heads == 4);
  CHECK(a.shape.kv_heads == 2);
  CHECK(a.shape.head_dim == 16);
  CHECK(a.shape.norm_eps == doctest::Approx(1e-5));
  CHECK(a.rope_scaling.type == "llama3");
  CHECK(a.eos == std::vector<int32_t>{126, 127});
  CHECK(l.manifest->weight_files().size() == 2);  // two shards through the index
  // The scaled frequencies equal the reference's, band by band.
  const json golden = load_json(kData / "llama-gqa-bf16" / "golden.json");
  const std::vector<double> f = a.inv_freq();
  REQUIRE(f.size() == golden["derived"]["inv_freq"].size());
  for (size_t i = 0; i < f.size(); ++i) CHECK(f[i] == doctest::Approx(golden["derived"]["inv_freq"][i].get<double>()).epsilon(1e-12));
  // Weights stay as stored: bf16, not converted to f32.
  const Weights w = l.manifest->load_weights(Backend::reference);
  CHECK(w.get("model.layers.0.self_attn.q_proj.weight").dtype == DType::bf16);
  CHECK(w.bytes() == l.manifest->weights_bytes);
}

// Laid out for the cpu backend, the matrices hold the same elements (as
// pair panels on AVX-512 without AMX: kernels::matmul_layout), every other
// tensor stays row-major, a conversion reads them row-major, weights
// written from them load back as the files' own, and laid out for the
// reference they are the loaded bytes again; laid out as pair panels
// whatever the processor, the same.
TEST_CASE("hf: weights laid out for a backend hold the same elements, and convert and write as rows") {
  Loaded l = load(kData / "llama-gqa-bf16", "llama", "stream", 4, 12);
  REQUIRE_MESSAGE(l.manifest, l.errors);
  const Weights rows = l.manifest->load_weights(Backend::reference);
  const auto specs = l.manifest->arch->tensors();
  for (auto forced : {std::optional<kernels::WeightLayout>{}, std::optional{kernels::WeightLayout::pair_panels}}) {
    Weights laid = l.manifest->load_weights(Backend::cpu);
    if (forced) laid.arrange(*forced);
    ModelParams params(laid, Backend::cpu);
    int matrices = 0;
    for (const TensorSpec& t : specs) {
      CAPTURE(t.name);
      const WeightTensor& w = laid.get(t.name);
      REQUIRE(w.dtype == DType::bf16);
      const kernels::WeightLayout want = !t.matrix ? kernels::WeightLayout::rows
                                         : forced  ? *forced
                                                   : kernels::matmul_layout(Backend::cpu, DType::bf16, t.shape[1]);
      REQUIRE(w.layout == want);
      CHECK(params.layout(t.name, DType::bf16) == want);
      CHECK(params.layout(t.name, DType::f32) == kernels::WeightLayout::rows);
      if (t.shape.size() != 2) continue;
      matrices += t.matrix;
      const float* f = params.f32(t.name);
      for (int64_t o = 0; o < t.shape[0]; ++o)
        for (int64_t k = 0; k < t.shape[1]; ++k) {
          const float v = load_as_f32(rows.get(t.name).data, DType::bf16, static_cast<size_t>(o * t.shape[1] + k));
          REQUIRE(kernels::matrix_element(w.data, DType::bf16, w.layout, t.shape[0], t.shape[1], o, k) == v);
          REQUIRE(f[o * t.shape[1] + k] == v);
        }
    }
    CHECK(matrices == 2 + 7 * l.manifest->arch->trunk().layers);  // embedding, untied head, 7 projections a layer
    const fs::path file = fs::temp_directory_path() / fmt::format("mstar-hf-laid-{}.safetensors", ::getpid());
    write_weights(laid, specs, file, DType::bf16);
    const Weights back = Weights::load({file}, specs);
    fs::remove(file);
    laid.arrange_for(Backend::reference);
    for (const auto& [name, t] : rows.all()) {
      CAPTURE(name);
      CHECK(laid.get(name).layout == kernels::WeightLayout::rows);
      CHECK(std::memcmp(t.data, laid.get(name).data, t.bytes) == 0);
      CHECK(std::memcmp(t.data, back.get(name).data, t.bytes) == 0);
    }
  }
}

// mstar-bench checkpoint's decode_product_flops from the architecture,
// against the files themselves: each matrix of the checkpoint multiplies
// once per token, except the embedding, a lookup, which multiplies only
// when it is also the logits' (tied: no lm_head in the files).
TEST_CASE("hf: a decoded token's product flops count every matrix of the files once, the embedding only when tied") {
  for (const auto& [folder, kind] : {std::pair<std::string, std::string>{"llama-gqa-bf16", "llama"},
                                     {"llama-tied-f32", "llama"}, {"qwen2-bias-bf16", "qwen2"}}) {
    CAPTURE(folder);
    Loaded l = load(kData / folder, kind, "stream", 4, 12);
    REQUIRE_MESSAGE(l.manifest, l.errors);
    int64_t matrices = 0, embedding = 0;
    bool lm_head = false;
    for (const fs::path& f : l.manifest->weight_files())
      for (const auto& [name, t] : read_safetensors_header(f).tensors) {
        if (t.shape.size() != 2) continue;
        matrices += t.shape[0] * t.shape[1];
        if (name == "model.embed_tokens.weight") embedding = t.shape[0] * t.shape[1];
        lm_head = lm_head || name == "lm_head.weight";
      }
    REQUIRE(embedding > 0);
    CHECK(lm_head == !dynamic_cast<const HfArchitecture&>(*l.manifest->arch).tie_word_embeddings);
    const double want = 2.0 * static_cast<double>(matrices - (lm_head ? embedding : 0));
    CHECK(bench::decode_product_flops(l.manifest->arch->trunk(), l.manifest->arch->vocab_size()) == want);
  }
}

// With activations rounded to bf16 the reference rounds every product's
// input as the engine does, from float64 where the engine rounds f32: they
// could differ where a value sits on a rounding boundary, and at these sizes
// none does (measured: 2.4e-7 at most), so the f32 tolerance holds.
// tools/make_hf_goldens.py checks that the rounding moves these logits by
// over 10 times it (4.7e-3 to 1.2e-2), so the last check tells the modes apart.
// Every bf16 matrix as pair panels too, whichever layout this processor
// would choose: the projections, the embedding lookup and the logits head
// read through the layout (qwen2-bias-bf16's head is its embedding table,
// llama-gqa-bf16's its own; vocab 144 ends in a part panel of 16 columns).
TEST_CASE("hf: full attention logits and greedy tokens equal the independent reference, both backends, f32 and bf16 "
          "activations, weights as rows and as pair panels") {
  for (const char* name : {"llama-gqa-bf16", "llama-tied-f32", "qwen2-bias-bf16"})
    for (Backend b : test::host_backends())
      for (DType activations : {DType::f32, DType::bf16})
        for (auto layout : {kernels::WeightLayout::rows, kernels::WeightLayout::pair_panels}) {
          if (layout == kernels::WeightLayout::pair_panels && std::string_view(name).ends_with("f32")) continue;
          CAPTURE(name);
          CAPTURE(to_string(b));
          CAPTURE(to_string(activations));
          CAPTURE(kernels::layout_name(layout));
          const json golden = load_json(kData / name / "golden.json");
          // A window longer than the whole run: nothing is evicted, so the
          // bounded cache is full attention.
          Loaded l = load(kData / name, golden["config"]["model_type"], "stream", 0, 64);
          REQUIRE_MESSAGE(l.manifest, l.errors);
          Served s(*l.manifest, b, activations, layout);
          std::vector<std::vector<float>> logits;
          const auto tokens = run_greedy(s, golden["voice"].get<std::vector<int32_t>>(),
                                         golden["prompt"].get<std::vector<int32_t>>(), golden["full"]["steps"].get<int>(),
                                         logits);
          if (activations == DType::f32) {
            CHECK(tokens == golden["full"]["tokens"].get<std::vector<int32_t>>());
            CHECK(max_diff(logits[0], golden["full"]["logits"]) <= kTol);
          } else {
            CHECK(max_diff(logits[0], golden["bf16_activations"]["logits"]) <= kTol);
            CHECK(max_diff(logits[0], golden["full"]["logits"]) > 10 * kTol);
          }
        }
}

TEST_CASE("hf: beyond the window, sink + window streams equal the reference's, in both position modes") {
  for (const char* name : {"llama-gqa-bf16", "llama-tied-f32", "qwen2-bias-bf16"})
    for (const char* positions : {"stream", "cache"})
      for (Backend b : test::host_backends()) {
        CAPTURE(name);
        CAPTURE(positions);
        CAPTURE(to_string(b));
        const json golden = load_json(kData / name / "golden.json");
        const json& bounded = golden["bounded"];
        Loaded l = load(kData / name, golden["config"]["model_type"], positions, bounded["sink"].get<int64_t>(),
                        bounded["window"].get<int64_t>());
        REQUIRE_MESSAGE(l.manifest, l.errors);
        Served s(*l.manifest, b);
        std::vector<std::vector<float>> logits;
        const auto tokens = run_greedy(s, golden["voice"].get<std::vector<int32_t>>(),
                                       golden["prompt"].get<std::vector<int32_t>>(), bounded["steps"].get<int>(), logits);
        const json& want = bounded[positions];
        CHECK(tokens == want["tokens"].get<std::vector<int32_t>>());
        for (size_t i = 0; i < bounded["logit_steps"].size(); ++i) {
          const auto k = bounded["logit_steps"][i].get<size_t>();
          CAPTURE(k);
          CHECK(max_diff(logits[k], want["logits"][i]) <= kTol);
        }
      }
}

TEST_CASE("hf: broken folders are refused before anything is allocated, naming the file and the reason") {
  const json cases = load_json(kData / "bad" / "cases.json");
  for (const auto& [name, c] : cases.items()) {
    CAPTURE(name);
    const fs::path folder = kData / "bad" / name;
    const std::string kind =
        fs::exists(folder / "config.json") ? load_json(folder / "config.json").value("model_type", "llama") : "llama";
    Loaded l = load(folder, kind == "mistral" ? "llama" : kind, "stream", 4, 12);
    CHECK(!l.manifest);
    CHECK_MESSAGE(l.errors.find(c["mentions"].get<std::string>()) != std::string::npos, l.errors);
    CHECK(l.errors.find("m.yaml:3:13: error: checkpoint") != std::string::npos);  // placed at the checkpoint key
  }
}

TEST_CASE("hf: a model.safetensors that is a directory or a device is refused as such, not as missing") {
  const fs::path dir = fs::temp_directory_path() / ("mstar-hf-special-" + std::to_string(::getpid()));
  fs::create_directories(dir);
  const fs::path single = dir / "model.safetensors";
  CHECK_THROWS_WITH_AS(hf_weight_files(dir), (dir.string() + ": no model.safetensors or model.safetensors.index.json").c_str(),
                       InputError);
  fs::create_directory(single);
  CHECK_THROWS_WITH_AS(hf_weight_files(dir),
                       (single.string() + ": is not a regular file (a directory, device, socket or pipe?)").c_str(),
                       InputError);
  fs::remove(single);
  fs::create_symlink("/dev/zero", single);
  CHECK_THROWS_WITH_AS(hf_weight_files(dir),
                       (single.string() + ": is not a regular file (a directory, device, socket or pipe?)").c_str(),
                       InputError);
  fs::remove_all(dir);
}

TEST_CASE("hf: the manifest may not restate what the checkpoint says, and may not mix families") {
  Loaded l = load(kData / "qwen2-bias-bf16", "llama", "stream", 4, 12);
  CHECK(l.errors.find("model_type: 'qwen2', but the manifest says kind llama") != std::string::npos);
  l = load(kData / "qwen2-bias-bf16", "qwen2", "stream", 4, 12, "architecture: {layers: 2}\n");
  CHECK(l.errors.find("architecture: not set for a model of kind qwen2: it comes from the checkpoint folder's "
                      "config.json") != std::string::npos);
  l = load(kData / "qwen2-bias-bf16", "qwen2", "sideways", 4, 12);
  CHECK(l.errors.find("positions: expected stream or cache, got 'sideways'") != std::string::npos);
  l = load(kData / "no-such-folder", "qwen2", "stream", 4, 12);
  CHECK(l.errors.find("no-such-folder: neither a folder") != std::string::npos);
}
