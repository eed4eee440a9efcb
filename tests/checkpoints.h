#pragma once
// What the checkpoint tests share (test_hf.cpp, test_gguf_models.cpp): a
// checkpoint served through a manifest as a user would, and the golden
// protocol's greedy run over it.
#include <doctest/doctest.h>
#include <fmt/format.h>
#include <unistd.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "config/diagnostics.h"
#include "config/manifest.h"
#include "models/model.h"
#include "resources/resource_set.h"

namespace mstar::test {

inline nlohmann::json load_json(const std::filesystem::path& p) {
  std::ifstream in(p);
  return nlohmann::json::parse(in);
}

struct Loaded {
  std::optional<ModelManifest> manifest;
  std::string errors;
};

// Writes a manifest naming `folder` and loads it as mstar-check does; the
// manifest's folder is removed once it is read, whatever the test checks
// after.
inline Loaded load(const std::filesystem::path& folder, const std::string& kind, const std::string& positions,
                   int64_t sink, int64_t window, const std::string& extra = "") {
  static int n = 0;
  const std::filesystem::path dir =
      std::filesystem::temp_directory_path() / fmt::format("mstar-hf-test-{}-{}", ::getpid(), n++);
  std::filesystem::create_directories(dir);
  std::ofstream(dir / "m.yaml") << fmt::format(
      "name: t\nkind: {}\ncheckpoint: {}\npositions: {}\n{}resources:\n  - resource_key: kv\n    type: bounded_kv\n"
      "    nodes: attn.*\n    config:\n      rows_per_request: 1\n      max_source_len: 10\n      min_source_len: 10\n"
      "      retention: {{sink: {}, window: {}}}\n      max_slots: 2\n      query_window: 8\n      dtype: f32\n",
      kind, folder.string(), positions, extra, sink, window);
  Diagnostics d;
  Loaded l;
  l.manifest = load_manifest(dir / "m.yaml", "m.yaml", d);
  l.errors = d.str();
  std::filesystem::remove_all(dir);
  return l;
}

// The manifest's weights for backend b, or with every matrix laid out as `layout`.
inline Weights laid_out(const ModelManifest& m, Backend b, std::optional<kernels::WeightLayout> layout) {
  Weights w = m.load_weights(b);
  if (layout) w.arrange(*layout);
  return w;
}

// A token model over the manifest's resources on `backend`.
struct Served {
  Weights weights;
  std::unique_ptr<Model> built;
  TokenModel* model;
  ResourceSet kv;
  Served(const ModelManifest& m, Backend b, DType activations = DType::f32,
         std::optional<kernels::WeightLayout> layout = std::nullopt)
      : weights(laid_out(m, b, layout)),
        built(m.family->make(*m.arch, weights, ModelOptions{b, 2, activations})),
        model(dynamic_cast<TokenModel*>(built.get())),
        kv(m.resource_specs(), ResourceOptions{b, 2}) {}
};

// The golden protocol: the voice prefilled as the source, the prompt in one
// step, then `steps` greedy choices fed back one token a step. Returns the
// tokens and every choice's logits.
inline std::vector<int32_t> run_greedy(Served& s, const std::vector<int32_t>& voice, const std::vector<int32_t>& prompt,
                                       int steps, std::vector<std::vector<float>>& logits) {
  s.kv.register_source(1, static_cast<int64_t>(voice.size()));
  s.model->prefill_source(s.kv, 1, voice, 1);
  s.kv.ingest_request("r");
  std::vector<int32_t> out, feed = prompt;
  int64_t written = 0;
  for (int k = 0; k < steps; ++k) {
    Step st;
    st.segments = {{"r", "step", static_cast<int64_t>(feed.size())}};
    st.streams = {{"r", {static_cast<int64_t>(voice.size()), written, 1}}};
    StepContext ctx;
    ctx.add_rows("r", 1);
    REQUIRE(s.kv.admit(st, ctx).ok());
    s.kv.plan(st, ctx);
    const std::span<const float> lg = s.model->step(s.kv, st, ctx, {feed});
    s.kv.commit(st, ctx);
    written += static_cast<int64_t>(feed.size());
    const auto t = static_cast<int32_t>(std::max_element(lg.begin(), lg.end()) - lg.begin());
    logits.emplace_back(lg.begin(), lg.end());
    out.push_back(t);
    feed = {t};
  }
  return out;
}

inline float max_diff(const std::vector<float>& got, const nlohmann::json& want) {
  float m = got.size() == want.size() ? 0.0f : INFINITY;
  for (size_t i = 0; i < got.size() && i < want.size(); ++i) m = std::max(m, std::fabs(got[i] - want[i].get<float>()));
  return m;
}

}  // namespace mstar::test
