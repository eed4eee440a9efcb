// The models end to end through their resources, against plain paths that
// need no cache: full-history dense attention for tts (recomputed from the
// whole stream every step), a naive per-frame store for world. The oracles
// run the same trunk (models/trunk.h) with their own attention, embedding,
// positions and heads, written here from docs/models.md.
#include <doctest/doctest.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <limits>
#include <map>
#include <random>

#include "core/errors.h"
#include "models/family.h"
#include "models/safetensors.h"
#include "models/sampling.h"
#include "models/trunk.h"
#include "models/families/tts.h"
#include "models/weights.h"
#include "models/families/world.h"
#include "kernels/ops.h"
#include "resources/resource_set.h"
#include "kernels/rope.h"
#include "support.h"
#include "backends.h"
#include "resources/bounded_kv/manager.h"
#include "resources/ring_kv/manager.h"

using namespace mstar;
namespace fs = std::filesystem;

namespace {

TrunkNames names(int64_t l) {
  const std::string p = fmt::format("layers.{}.", l);
  return {p + "attn_norm.weight", p + "attn.q.weight", p + "attn.k.weight", p + "attn.v.weight", p + "attn.o.weight",
          p + "mlp_norm.weight",  p + "mlp.gate.weight", p + "mlp.up.weight", p + "mlp.down.weight", "", "", "", "", ""};
}

// Dense softmax attention with grouped-query heads, in double: query i sees
// keys [0, visible(i)); q [nq, heads, hd], k/v [nk, kv_heads, hd].
void dense_attention(const float* q, int64_t nq, const float* k, const float* v, int64_t nk, int64_t heads,
                     int64_t kv_heads, int64_t hd, const std::function<int64_t(int64_t)>& visible, float* o) {
  const int64_t group = heads / kv_heads;
  for (int64_t i = 0; i < nq; ++i)
    for (int64_t h = 0; h < heads; ++h) {
      const int64_t kh = h / group, vis = std::min(visible(i), nk);
      std::vector<const float*> keys, vals;
      for (int64_t j = 0; j < vis; ++j) keys.push_back(k + (j * kv_heads + kh) * hd), vals.push_back(v + (j * kv_heads + kh) * hd);
      const auto out = test::naive_attention(q + (i * heads + h) * hd, keys, vals, hd, 1.0 / std::sqrt(static_cast<double>(hd)));
      std::copy(out.begin(), out.end(), o + (i * heads + h) * hd);
    }
}

TtsArchitecture tts_arch(const std::string& positions = "stream") {
  return TtsArchitecture(CommonArchitecture{2, 32, 2, 1, 16, 48, 10000, positions}, TtsFields{50, 49});
}

BoundedKVSpec tts_kv(const TtsArchitecture& a, SinkWindow pol, int64_t slots = 4) {
  BoundedKVConfig c;
  c.num_layers = a.common.layers;
  c.num_heads = a.common.kv_heads;
  c.head_dim = a.common.head_dim;
  c.rows_per_request = 1;
  c.max_source_len = 16;
  c.retention = pol;
  c.max_slots = slots;
  c.dtype = DType::f32;
  return BoundedKVSpec{"kv", {}, c};
}

// The full-history oracle: logits after voice ++ tokens with dense causal
// attention over everything, every key at its stream position, no cache.
std::vector<float> full_history_logits(const TtsArchitecture& a, const Weights& w, const std::vector<int32_t>& voice,
                                       const std::vector<int32_t>& tokens) {
  const auto& c = a.common;
  ModelParams params(w, Backend::reference);
  Trunk trunk(a.trunk(), params, names, "final_norm.weight", "", DType::f32, ModelOptions{Backend::reference, 1});
  std::vector<int32_t> all = voice;
  all.insert(all.end(), tokens.begin(), tokens.end());
  const auto n = static_cast<int64_t>(all.size());
  const int64_t hd = c.head_dim, W = c.width;
  const std::vector<float> inv = rope_inv_freq(static_cast<int32_t>(hd), static_cast<double>(c.rope_theta));
  std::vector<float> x(static_cast<size_t>(n * W));
  const float* embed = params.f32("embed.weight");
  for (int64_t t = 0; t < n; ++t) std::copy_n(embed + all[static_cast<size_t>(t)] * W, W, x.begin() + t * W);
  trunk.run(x.data(), n, [&](int64_t, float* q, float* k, float* v, float* o) {
    for (int64_t t = 0; t < n; ++t) {
      for (int64_t h = 0; h < c.heads; ++h) rotate_half(q + (t * c.heads + h) * hd, static_cast<int32_t>(hd), static_cast<double>(t), inv.data());
      for (int64_t h = 0; h < c.kv_heads; ++h) rotate_half(k + (t * c.kv_heads + h) * hd, static_cast<int32_t>(hd), static_cast<double>(t), inv.data());
    }
    dense_attention(q, n, k, v, n, c.heads, c.kv_heads, hd, [](int64_t i) { return i + 1; }, o);
  });
  std::vector<float> last(x.end() - W, x.end()), normed(static_cast<size_t>(W)), logits(static_cast<size_t>(a.tts.vocab_size));
  trunk.final_norm(last.data(), 1, normed.data());
  trunk.project(normed.data(), 1, W, {params.f32("head.weight"), DType::f32}, a.tts.vocab_size, logits.data());
  return logits;
}

// Greedy decoding through the bounded cache: the voice prefilled as source
// 1, the prompt in one step, then one token a step.
std::vector<int32_t> greedy_through_cache(TokenModel& model, ResourceSet& kv, const std::vector<int32_t>& voice,
                                          const std::vector<int32_t>& prompt, int steps,
                                          std::vector<std::vector<float>>* all_logits = nullptr) {
  kv.register_source(1, static_cast<int64_t>(voice.size()));
  model.prefill_source(kv, 1, voice, 1);
  kv.ingest_request("r");
  std::vector<int32_t> out, feed = prompt;
  int64_t written = 0;
  for (int s = 0; s < steps; ++s) {
    Step st;
    st.segments = {{"r", "step", static_cast<int64_t>(feed.size())}};
    st.streams = {{"r", {static_cast<int64_t>(voice.size()), written, 1}}};
    StepContext ctx;
    ctx.add_rows("r", 1);
    REQUIRE(kv.admit(st, ctx).ok());
    kv.plan(st, ctx);
    const std::span<const float> logits = model.step(kv, st, ctx, {feed});
    kv.commit(st, ctx);
    if (all_logits) all_logits->emplace_back(logits.begin(), logits.end());
    written += static_cast<int64_t>(feed.size());
    const auto t = static_cast<int32_t>(std::max_element(logits.begin(), logits.end()) - logits.begin());
    out.push_back(t);
    feed = {t};
  }
  return out;
}

}  // namespace

TEST_CASE("families: the registry knows tts and world, and nothing else by accident") {
  CHECK(find_family("tts") != nullptr);
  CHECK(find_family("tts")->task == "speech");
  CHECK(find_family("tts")->resource_type == "bounded_kv");
  CHECK(find_family("world")->task == "frames");
  CHECK(find_family("world")->resource_type == "ring_kv");
  CHECK(find_family("mistral") == nullptr);
  CHECK(find_family("") == nullptr);
  const auto names = family_names();
  CHECK(std::find(names.begin(), names.end(), "tts") != names.end());
  CHECK(std::find(names.begin(), names.end(), "world") != names.end());
}

TEST_CASE("tts: with a window as long as the stream, greedy tokens equal the full-history path") {
  for (const char* positions : {"stream", "cache"})
    for (Backend b : test::host_backends()) {
      CAPTURE(positions);
      CAPTURE(to_string(b));
      const TtsArchitecture a = tts_arch(positions);
      const Weights w = Weights::dummy(a.tensors(), 5);
      auto model_built = tts_family().make(a, w, ModelOptions{b, 2});
      auto& model = dynamic_cast<TokenModel&>(*model_built);
      ResourceSet kv({tts_kv(a, SinkWindow{4, 64})}, ResourceOptions{b, 2});
      const std::vector<int32_t> voice{3, 14, 15, 9, 26, 5}, prompt{7, 1, 8, 2, 8};
      const auto cached = greedy_through_cache(model, kv, voice, prompt, 24);
      std::vector<int32_t> history = prompt, plain;
      for (int s = 0; s < 24; ++s) {
        const auto logits = full_history_logits(a, w, voice, history);
        const auto t = static_cast<int32_t>(std::max_element(logits.begin(), logits.end()) - logits.begin());
        plain.push_back(t);
        history.push_back(t);
      }
      CHECK(cached == plain);
    }
}

TEST_CASE("tts: a small window streams 20 times its length with memory_bytes unchanged") {
  for (const char* positions : {"stream", "cache"}) {
    const TtsArchitecture a = tts_arch(positions);
    const Weights w = Weights::dummy(a.tensors(), 5);
    auto model_built = tts_family().make(a, w, ModelOptions{Backend::cpu, 1});
      auto& model = dynamic_cast<TokenModel&>(*model_built);
    ResourceSet kv({tts_kv(a, SinkWindow{2, 8})}, ResourceOptions{Backend::cpu, 1});
    const std::size_t before = kv.memory_bytes() + 2 * 1 * 1 * 6 * 16 * 4 * 2;  // plus the 6-entry source to come
    const auto tokens = greedy_through_cache(model, kv, {1, 2, 3, 4, 5, 6}, {9, 9}, 20 * 10);
    CHECK(tokens.size() == 200u);
    CHECK(kv.memory_bytes() == before);
  }
}

TEST_CASE("tts: cpu and reference backends agree on logits within 1e-3") {
  const TtsArchitecture a = tts_arch();
  const Weights w = Weights::dummy(a.tensors(), 5);
  std::vector<std::vector<float>> ref_logits, cpu_logits;
  for (Backend b : test::host_backends()) {
    auto model_built = tts_family().make(a, w, ModelOptions{b, 2});
      auto& model = dynamic_cast<TokenModel&>(*model_built);
    ResourceSet kv({tts_kv(a, SinkWindow{2, 6})}, ResourceOptions{b, 2});
    greedy_through_cache(model, kv, {4, 4, 2}, {1, 2, 3}, 30, b == Backend::reference ? &ref_logits : &cpu_logits);
  }
  for (size_t s = 0; s < ref_logits.size(); ++s) CHECK(test::max_abs_diff(ref_logits[s], cpu_logits[s]) <= 1e-3f);
}

TEST_CASE("tts: layers split over two resources of different windows route each layer to its own") {
  // nodes decide which layers use which resource: layer 0 keeps a long
  // window, layer 1 a short one. With both windows covering the stream the
  // split is invisible; with the short one evicting, tokens differ from the
  // all-long model but stay reproducible.
  const TtsArchitecture a = tts_arch();
  const Weights w = Weights::dummy(a.tensors(), 5);
  auto split = [&](int64_t short_window) {
    BoundedKVSpec l0 = tts_kv(a, SinkWindow{4, 64}), l1 = tts_kv(a, SinkWindow{2, short_window});
    l0.resource_key = "long", l0.layers = {0}, l0.config.num_layers = 1;
    l1.resource_key = "short", l1.layers = {1}, l1.config.num_layers = 1;
    return std::vector<SpecRef>{l0, l1};
  };
  auto model_built = tts_family().make(a, w, ModelOptions{Backend::cpu, 1});
      auto& model = dynamic_cast<TokenModel&>(*model_built);
  ResourceSet whole({tts_kv(a, SinkWindow{4, 64})}, ResourceOptions{Backend::cpu, 1});
  ResourceSet both_long(split(64), ResourceOptions{Backend::cpu, 1});
  ResourceSet evicting(split(4), ResourceOptions{Backend::cpu, 1});
  const std::vector<int32_t> voice{3, 1, 4}, prompt{1, 5, 9};
  const auto want = greedy_through_cache(model, whole, voice, prompt, 30);
  CHECK(greedy_through_cache(model, both_long, voice, prompt, 30) == want);
  CHECK(greedy_through_cache(model, evicting, voice, prompt, 30) != want);
  CHECK_THROWS_WITH_AS(both_long.attention(2), "resources: no resource serves layer 2", InputError);
  CHECK_THROWS_WITH_AS(both_long.attention(-1), "resources: no resource serves layer -1", InputError);
}

TEST_CASE("weights: the safetensors file the tool writes loads back to the same tokens, broken files are refused") {
  const TtsArchitecture a = tts_arch();
  const auto specs = a.tensors();
  const Weights dummy = Weights::dummy(specs, 5);
  const fs::path dir = fs::temp_directory_path() / fmt::format("mstar-weights-test-{}", ::getpid());
  fs::create_directories(dir);
  const fs::path file = dir / "w.safetensors";
  write_weights(dummy, specs, file, DType::f32);
  const Weights loaded = Weights::load({file}, specs);
  for (const auto& [name, t] : dummy.all()) CHECK(std::memcmp(t.data, loaded.get(name).data, t.bytes) == 0);
  auto ma_built = tts_family().make(a, dummy, ModelOptions{Backend::cpu, 1});
  auto mb_built = tts_family().make(a, loaded, ModelOptions{Backend::cpu, 1});
  auto& ma = dynamic_cast<TokenModel&>(*ma_built);
  auto& mb = dynamic_cast<TokenModel&>(*mb_built);
  ResourceSet kva({tts_kv(a, SinkWindow{2, 8})}, ResourceOptions{Backend::cpu, 1});
  ResourceSet kvb({tts_kv(a, SinkWindow{2, 8})}, ResourceOptions{Backend::cpu, 1});
  CHECK(greedy_through_cache(ma, kva, {1, 2, 3}, {4, 5}, 20) == greedy_through_cache(mb, kvb, {1, 2, 3}, {4, 5}, 20));

  // bf16 storage loads as stored; the family asks for f32 and gets it rounded.
  write_weights(dummy, specs, file, DType::bf16);
  {
    const Weights bf = Weights::load({file}, specs);
    CHECK(bf.get("head.weight").dtype == DType::bf16);
    ModelParams params(bf, Backend::cpu);
    CHECK(params.f32("head.weight")[3] ==
          round_to(DType::bf16, static_cast<const float*>(dummy.get("head.weight").data)[3]));
  }

  // A model in two shards, listed by an index, loads to the same tensors.
  {
    std::vector<TensorData> first, second;
    nlohmann::json map = nlohmann::json::object();
    for (size_t i = 0; i < specs.size(); ++i) {
      const WeightTensor& t = dummy.get(specs[i].name);
      (i % 2 ? second : first).push_back({specs[i].name, DType::f32, specs[i].shape, t.data, t.bytes});
      map[specs[i].name] = i % 2 ? "b.safetensors" : "a.safetensors";
    }
    write_safetensors(dir / "a.safetensors", first);
    write_safetensors(dir / "b.safetensors", second);
    std::ofstream(dir / "model.safetensors.index.json") << nlohmann::json{{"weight_map", map}}.dump();
    const Weights sharded = Weights::load(weight_files(dir / "model.safetensors.index.json"), specs);
    for (const auto& [name, t] : dummy.all()) CHECK(std::memcmp(t.data, sharded.get(name).data, t.bytes) == 0);
    std::ofstream(dir / "model.safetensors.index.json") << nlohmann::json{{"weight_map", {{"x", "gone.safetensors"}}}}.dump();
    CHECK_THROWS_WITH_AS(weight_files(dir / "model.safetensors.index.json"),
                         ((dir / "model.safetensors.index.json").string() + ": names shard 'gone.safetensors', which is missing").c_str(),
                         InputError);
    fs::create_directory(dir / "gone.safetensors");  // there, but a directory: said so, not "missing"
    CHECK_THROWS_WITH_AS(weight_files(dir / "model.safetensors.index.json"),
                         ((dir / "model.safetensors.index.json").string() +
                          ": names shard 'gone.safetensors', which is not a regular file (a directory, device, socket "
                          "or pipe?)")
                             .c_str(),
                         InputError);
    // A shard is a plain file name beside the index: nothing else is opened.
    for (const char* outside : {"../../../../etc/passwd", "/etc/passwd", "sub/a.safetensors", "..", "."}) {
      std::ofstream(dir / "model.safetensors.index.json") << nlohmann::json{{"weight_map", {{"x", outside}}}}.dump();
      CHECK_THROWS_WITH_AS(weight_files(dir / "model.safetensors.index.json"),
                           ((dir / "model.safetensors.index.json").string() + ": weight_map.x: shard \"" + outside +
                            "\" is not a file name in the checkpoint's folder")
                               .c_str(),
                           InputError);
    }
  }

  // A tensor of rank 3 (any rank loads).
  {
    const std::vector<TensorSpec> cube{{"cube", {2, 3, 4}}};
    const Weights c = Weights::dummy(cube, 1);
    write_weights(c, cube, dir / "cube.safetensors", DType::f16);
    const Weights back = Weights::load({dir / "cube.safetensors"}, cube);
    CHECK(back.get("cube").shape == std::vector<int64_t>{2, 3, 4});
    CHECK(back.get("cube").dtype == DType::f16);
  }

  auto tensors_with = [&](auto&& edit) {
    std::vector<TensorData> data;
    for (const auto& t : specs) {
      const WeightTensor& wt = dummy.get(t.name);
      data.push_back({t.name, DType::f32, t.shape, wt.data, wt.bytes});
    }
    edit(data);
    write_safetensors(file, data);
    try {
      Weights::load({file}, specs);
    } catch (const InputError& e) {
      std::string msg = e.what();
      return msg.substr(msg.find(": ") + 2);
    }
    return std::string("loaded");
  };
  CHECK(tensors_with([](auto& d) { d.erase(d.begin() + 1); }) == "tensor 'layers.0.attn_norm.weight' is missing");
  CHECK(tensors_with([](auto& d) { d[2].shape = {16, 64}; }) ==
        "tensor 'layers.0.attn.q.weight' has shape [16, 64], expected [32, 32]");
  CHECK(tensors_with([](auto& d) { d[0].bytes -= 4; }) == "tensor 'embed.weight' holds 6396 bytes, its shape needs 6400");
  {  // f16 files load: the embedding's values rounded to f16
    const WeightTensor& e = dummy.get(specs[0].name);
    std::vector<uint16_t> half(static_cast<size_t>(e.bytes / 4));
    for (size_t i = 0; i < half.size(); ++i) half[i] = f32_to_f16(static_cast<const float*>(e.data)[i]);
    CHECK(tensors_with([&](auto& d) {
            d[0].dtype = DType::f16;
            d[0].data = half.data();
            d[0].bytes = half.size() * 2;
          }) == "loaded");
  }
  CHECK(tensors_with([](auto& d) { d.push_back(d[1]); d.back().name = "extra.weight"; }) ==
        "unexpected tensor 'extra.weight' (not part of this architecture)");
  {
    // A dtype mstar does not read: rewrite the first tensor's dtype in the header.
    tensors_with([](auto&) {});
    std::fstream f(file, std::ios::in | std::ios::out | std::ios::binary);
    std::string head(4096, '\0');
    f.read(head.data(), 4096);
    const auto at = head.find("\"F32\"");
    REQUIRE(at != std::string::npos);
    f.seekp(static_cast<std::streamoff>(at));
    f.write("\"I32\"", 5);
    f.close();
    CHECK_THROWS_WITH_AS(Weights::load({file}, specs),
                         // every type in the table, the built-in ones first (a test may register more)
                         doctest::Contains((file.string() + ": tensor 'embed.weight' has dtype I32 (expected F32, F16").c_str()),
                         InputError);
  }
  fs::remove_all(dir);
}

namespace {

WorldArchitecture world_arch() {
  return WorldArchitecture(CommonArchitecture{2, 32, 2, 1, 16, 32, 10000, "stream"}, WorldFields{4, 3, 2, 2, 4, 2, 2, 3, 3});
}

RingKVSpec world_kv() {
  RingKVConfig c;
  c.num_layers = 2;
  c.num_kv_heads = 1;
  c.head_dim = 16;
  c.tokens_per_frame = 4;
  c.layers = {RingGeometry{3, 3, 1}, RingGeometry{6, 2, 2}};
  c.num_sessions = 2;
  c.dtype = DType::f32;
  return RingKVSpec{"kv", {}, c};
}

std::vector<float> noise_for(uint64_t seed, size_t n) {
  std::mt19937_64 g(seed);
  std::normal_distribution<float> d;
  std::vector<float> x(n);
  for (auto& v : x) v = d(g);
  return x;
}

// The world oracle: the model's forward from its definition, with a naive
// store of every committed frame's keys and values per rollout and layer,
// attention over the frames the ring rule retains plus the frame itself.
struct NaiveWorld {
  const WorldArchitecture& a;
  const RingKVConfig& c;
  ModelParams params;
  Trunk trunk;
  std::map<std::string, std::vector<std::map<int64_t, std::pair<std::vector<float>, std::vector<float>>>>> kv;

  NaiveWorld(const WorldArchitecture& arch, const RingKVConfig& cfg, const Weights& w)
      : a(arch), c(cfg), params(w, Backend::reference),
        trunk(arch.trunk(), params, names, "final_norm.weight", "", DType::f32, ModelOptions{Backend::reference, 1}) {}

  void pass(const std::vector<std::string>& rids, const std::vector<int64_t>& frames, const std::vector<float>& lat,
            const std::vector<float>& controls, float noise, bool commit, std::vector<float>& out) {
    const auto& cm = a.common;
    const auto& wf = a.world;
    const auto B = static_cast<int64_t>(rids.size());
    const int64_t T = wf.tokens_per_frame, C = wf.latent_channels, W = cm.width, n = B * T, hd = cm.head_dim;
    std::vector<float> x(static_cast<size_t>(n * W)), cw(static_cast<size_t>(B * W));
    trunk.project(lat.data(), n, C, {params.f32("latent_in.weight"), DType::f32}, W, x.data());
    trunk.project(controls.data(), B, wf.control_dim, {params.f32("control_in.weight"), DType::f32}, W, cw.data());
    for (int64_t t = 0; t < n; ++t)
      for (int64_t i = 0; i < W; ++i)
        x[static_cast<size_t>(t * W + i)] += cw[static_cast<size_t>((t / T) * W + i)] + 0.1f * std::sin(noise * static_cast<float>(i + 1));
    const double theta = static_cast<double>(cm.rope_theta);
    const auto it = rope_inv_freq(static_cast<int32_t>(2 * wf.rope_time), theta),
               ih = rope_inv_freq(static_cast<int32_t>(2 * wf.rope_height), theta),
               iw = rope_inv_freq(static_cast<int32_t>(2 * wf.rope_width), theta);
    auto rot = [&](float* v, int64_t heads, int64_t t) {
      const auto rt = static_cast<int32_t>(wf.rope_time), rh = static_cast<int32_t>(wf.rope_height);
      for (int64_t h = 0; h < heads; ++h) {
        float* e = v + h * hd;
        rotate_pairs(e, 0, static_cast<int32_t>(hd / 2), rt, static_cast<double>(frames[static_cast<size_t>(t / T)]), it.data());
        rotate_pairs(e, rt, static_cast<int32_t>(hd / 2), rh, static_cast<double>((t % T) / wf.frame_width), ih.data());
        rotate_pairs(e, rt + rh, static_cast<int32_t>(hd / 2), static_cast<int32_t>(wf.rope_width),
                     static_cast<double>((t % T) % wf.frame_width), iw.data());
      }
    };
    trunk.run(x.data(), n, [&](int64_t l, float* q, float* k, float* v, float* o) {
      for (int64_t t = 0; t < n; ++t) rot(q + t * cm.heads * hd, cm.heads, t), rot(k + t * cm.kv_heads * hd, cm.kv_heads, t);
      const RingGeometry& g = c.layers[static_cast<size_t>(l)];
      for (size_t b = 0; b < rids.size(); ++b) {
        auto& store = kv[rids[b]];
        store.resize(static_cast<size_t>(c.num_layers));
        const int64_t f = frames[b], d = g.pinned_dilation, bucket = (f + d - 1) / d;
        std::vector<float> keys, vals;
        for (const auto& [g_frame, e] : store[static_cast<size_t>(l)])
          if (g_frame < f && g_frame % d == 0 && g_frame / d >= bucket - g.ring_buckets + (f % d == 0 ? 1 : 0)) {
            keys.insert(keys.end(), e.first.begin(), e.first.end());
            vals.insert(vals.end(), e.second.begin(), e.second.end());
          }
        const int64_t off = static_cast<int64_t>(b) * T * cm.kv_heads * hd;
        keys.insert(keys.end(), k + off, k + off + T * cm.kv_heads * hd);
        vals.insert(vals.end(), v + off, v + off + T * cm.kv_heads * hd);
        const auto nk = static_cast<int64_t>(keys.size()) / (cm.kv_heads * hd);
        dense_attention(q + static_cast<int64_t>(b) * T * cm.heads * hd, T, keys.data(), vals.data(), nk, cm.heads,
                        cm.kv_heads, hd, [nk](int64_t) { return nk; }, o + static_cast<int64_t>(b) * T * cm.heads * hd);
        if (commit)
          store[static_cast<size_t>(l)][f] = {std::vector<float>(k + off, k + off + T * cm.kv_heads * hd),
                                              std::vector<float>(v + off, v + off + T * cm.kv_heads * hd)};
      }
    });
    std::vector<float> normed(static_cast<size_t>(n * W));
    trunk.final_norm(x.data(), n, normed.data());
    out.resize(static_cast<size_t>(n * C));
    trunk.project(normed.data(), n, W, {params.f32("latent_out.weight"), DType::f32}, C, out.data());
  }

  std::vector<float> generate(const std::vector<std::string>& rids, const std::vector<int64_t>& frames,
                              std::vector<float> x, const std::vector<float>& controls) {
    const int64_t steps = a.world.denoise_steps;
    std::vector<float> pred;
    for (int64_t s = 0; s < steps; ++s) {
      pass(rids, frames, x, controls, 1.0f - static_cast<float>(s) / static_cast<float>(steps), false, pred);
      const float step = 1.0f / static_cast<float>(steps - s);
      for (size_t i = 0; i < x.size(); ++i) x[i] += (pred[i] - x[i]) * step;
    }
    pass(rids, frames, x, controls, 0.0f, true, pred);
    return x;
  }
};

// One step of rollouts through the ring: admit, plan, optional extra work,
// generate, commit.
std::vector<float> ring_step(WorldModel& model, ResourceSet& kv, const std::vector<std::string>& rids,
                             const std::vector<int64_t>& frames, const std::vector<float>& noise,
                             const std::vector<float>& controls, const std::function<void()>& before = {}) {
  Step st;
  StepContext ctx;
  for (size_t i = 0; i < rids.size(); ++i) {
    st.segments.push_back({rids[i], "frame", 4});
    st.frames[rids[i]] = frames[i];
    ctx.add_rows(rids[i], 1);
  }
  REQUIRE(kv.admit(st, ctx).ok());
  kv.plan(st, ctx);
  if (before) before();
  auto out = model.generate(kv, frames, noise, controls);
  kv.commit(st, ctx);
  return out;
}

}  // namespace

TEST_CASE("world: frames through the ring equal a naive store of the retained frames, both backends") {
  const WorldArchitecture a = world_arch();
  const Weights w = Weights::dummy(a.tensors(), 9);
  const RingKVSpec spec = world_kv();
  for (Backend b : test::host_backends()) {
    CAPTURE(to_string(b));
    WorldModel model(a, w, ModelOptions{b, 2});
    ResourceSet kv({spec}, ResourceOptions{b, 2});
    NaiveWorld naive(a, spec.config, w);
    kv.ingest_request("a");
    kv.ingest_request("b");
    for (int64_t f = 0; f < 14; ++f) {
      // Interleaved rollouts: b starts later and skips no frame of its own.
      std::vector<std::string> rids{"a"};
      std::vector<int64_t> frames{f};
      if (f >= 3) rids.push_back("b"), frames.push_back(f - 3);
      const auto B = static_cast<int64_t>(rids.size());
      const auto noise = noise_for(static_cast<uint64_t>(f), static_cast<size_t>(B * 4 * 4));
      const std::vector<float> controls(static_cast<size_t>(B * 3), 0.5f);
      const auto ring = ring_step(model, kv, rids, frames, noise, controls);
      const auto plain = naive.generate(rids, frames, noise, controls);
      CHECK(test::max_abs_diff(ring, plain) <= 1e-4f);
    }
  }
}

TEST_CASE("world: denoising passes that do not commit never change what a later frame sees") {
  const WorldArchitecture a = world_arch();
  const Weights w = Weights::dummy(a.tensors(), 9);
  std::vector<std::vector<float>> runs[2];
  for (int junk = 0; junk < 2; ++junk) {
    WorldModel model(a, w, ModelOptions{Backend::cpu, 1});
    ResourceSet kv({world_kv()}, ResourceOptions{Backend::cpu, 1});
    kv.ingest_request("a");
    for (int64_t f = 0; f < 10; ++f)
      runs[junk].push_back(ring_step(model, kv, {"a"}, {f}, noise_for(static_cast<uint64_t>(f), 16),
                                     std::vector<float>(3, 0.25f), [&] {
                                       if (!junk || f % 3 != 1) return;
                                       for (int64_t l = 0; l < 2; ++l) {  // extra passes with junk inputs, not committed
                                         auto k = noise_for(99 + static_cast<uint64_t>(f), 4 * 16);
                                         auto v = noise_for(7 + static_cast<uint64_t>(f), 4 * 16);
                                         auto [memory, local] = kv.attention(l);
                                         dynamic_cast<RingKVManager&>(memory).upsert(local, f32_view(k.data(), Shape{4, 1, 16}),
                                                     f32_view(v.data(), Shape{4, 1, 16}), false);
                                       }
                                     }));
  }
  for (size_t f = 0; f < runs[0].size(); ++f) CHECK(runs[0][f] == runs[1][f]);
}

TEST_CASE("world: cpu and reference backends agree within 1e-3") {
  const WorldArchitecture a = world_arch();
  const Weights w = Weights::dummy(a.tensors(), 9);
  std::vector<std::vector<float>> out[2];
  for (int i = 0; i < 2; ++i) {
    const Backend b = i == 0 ? Backend::reference : Backend::cpu;
    WorldModel model(a, w, ModelOptions{b, 2});
    ResourceSet kv({world_kv()}, ResourceOptions{b, 2});
    kv.ingest_request("a");
    for (int64_t f = 0; f < 8; ++f)
      out[i].push_back(ring_step(model, kv, {"a"}, {f}, noise_for(static_cast<uint64_t>(f), 16), std::vector<float>(3, 0.1f)));
  }
  for (size_t f = 0; f < out[0].size(); ++f) CHECK(test::max_abs_diff(out[0][f], out[1][f]) <= 1e-3f);
}

TEST_CASE("sampling: greedy, seeded draws, top-k and top-p, nonsense refused") {
  const std::vector<float> logits{0.1f, 2.0f, 1.9f, -1.0f};
  CHECK(Sampler(SamplingParams{}).sample(logits) == 1);
  Sampler a(SamplingParams{1.0, 0, 1.0, 42}), b(SamplingParams{1.0, 0, 1.0, 42});
  for (int i = 0; i < 50; ++i) CHECK(a.sample(logits) == b.sample(logits));
  Sampler k2(SamplingParams{5.0, 2, 1.0, 3});
  for (int i = 0; i < 200; ++i) {
    const int32_t t = k2.sample(logits);
    CHECK((t == 1 || t == 2));
  }
  Sampler p(SamplingParams{1.0, 0, 0.3, 3});  // the top token alone holds over 30% of the mass
  for (int i = 0; i < 100; ++i) CHECK(p.sample(logits) == 1);
  CHECK_THROWS_WITH_AS(SamplingParams({-1.0, 0, 1.0, 0}).validate("r"), "r: temperature must be in [0, 100], got -1",
                       InputError);
  CHECK_THROWS_WITH_AS(SamplingParams({1.0, 0, 0.0, 0}).validate("r"), "r: top_p must be in (0, 1], got 0", InputError);
  CHECK_THROWS_WITH_AS(SamplingParams({1.0, -3, 1.0, 0}).validate("r"), "r: top_k must not be negative, got -3",
                       InputError);
}

namespace {

// The sampler's definition, written plainly: sort everything, keep top_k,
// the smallest prefix reaching top_p, one draw walking the kept tokens in id
// order.
int32_t sample_by_full_sort(std::span<const float> logits, const SamplingParams& sp, std::mt19937_64& gen) {
  std::vector<std::pair<float, int32_t>> v;
  for (size_t i = 0; i < logits.size(); ++i) v.emplace_back(logits[i], static_cast<int32_t>(i));
  const double mx = *std::max_element(logits.begin(), logits.end());
  const auto w = [&](float l) { return std::exp((l - mx) / sp.temperature); };
  std::sort(v.begin(), v.end(), [](auto& a, auto& b) { return a.first > b.first || (a.first == b.first && a.second < b.second); });
  size_t keep = sp.top_k > 0 ? std::min(v.size(), static_cast<size_t>(sp.top_k)) : v.size();
  double total = 0;
  for (size_t i = 0; i < keep; ++i) total += w(v[i].first);
  double mass = 0;
  for (size_t i = 0; i < keep; ++i)
    if ((mass += w(v[i].first) / total) >= sp.top_p) {
      keep = i + 1;
      break;
    }
  v.resize(keep);
  std::sort(v.begin(), v.end(), [](auto& a, auto& b) { return a.second < b.second; });
  double sub = 0;
  for (auto& t : v) sub += w(t.first);
  double u = std::uniform_real_distribution<double>(0.0, sub)(gen);
  for (auto& t : v) {
    if (u < w(t.first)) return t.second;
    u -= w(t.first);
  }
  return v.back().second;
}

}  // namespace

TEST_CASE("sampling: the selection fast paths draw what a full sort draws, at a 151,936 vocabulary") {
  test::Rng rng(11);
  for (size_t vocab : {size_t{1000}, size_t{151936}}) {
    std::vector<float> logits = rng.normals(vocab);
    for (size_t i = 0; i < vocab; i += 97) logits[i] = logits[i / 2];  // ties
    // The last: the largest top_p below 1, whose candidate bound (at 151,936)
    // passes the buckets' range, so every logit is bucketed.
    for (const SamplingParams& sp : {SamplingParams{0.8, 50, 0.95, 1}, SamplingParams{1.0, 0, 0.9, 2},
                                     SamplingParams{0.5, 0, 0.3, 3}, SamplingParams{1.2, 0, 1.0, 4},
                                     SamplingParams{0.7, 2000, 1.0, 5}, SamplingParams{1.0, 0, std::nextafter(1.0, 0.0), 7}}) {
      CAPTURE(vocab);
      CAPTURE(sp.top_k);
      CAPTURE(sp.top_p);
      Sampler fast(sp);
      std::mt19937_64 gen(sp.seed);
      for (int draw = 0; draw < 20; ++draw) CHECK(fast.sample(logits) == sample_by_full_sort(logits, sp, gen));
    }
  }
  // Logits of a few values: every top_p boundary falls inside a run of ties,
  // where the nucleus ends at the boundary's id. Not at 151,936: there a
  // boundary token weighs a few millionths of the total, and the f32 exps'
  // rounding (2e-7, against the definition's double) can move the boundary
  // along a run; at these sizes it weighs 1e-4 or more.
  for (size_t vocab : {size_t{1000}, size_t{4097}}) {
    std::vector<float> logits = rng.normals(vocab);
    for (float& l : logits) l = std::round(l * 2.0f) / 2.0f;
    for (double top_p : {0.3, 0.5, 0.9}) {
      CAPTURE(vocab);
      CAPTURE(top_p);
      const SamplingParams sp{1.0, 0, top_p, 6};
      Sampler fast(sp);
      std::mt19937_64 gen(sp.seed);
      for (int draw = 0; draw < 50; ++draw) CHECK(fast.sample(logits) == sample_by_full_sort(logits, sp, gen));
    }
  }
}

TEST_CASE("sampling: temperatures down to the smallest double draw what greedy draws, in every path") {
  test::Rng rng(3);
  const std::vector<float> logits = rng.normals(1000);
  const auto top = static_cast<int32_t>(std::max_element(logits.begin(), logits.end()) - logits.begin());
  // 1e-30 has a float inverse; below about 2.9e-39 the inverse overflows and
  // 1e-46 is 0 as a float (a top_k floor search that started at a gap of 0
  // never ended).
  for (double t : {1e-10, 1e-30, 1e-40, 1e-46, 1e-300, std::numeric_limits<double>::denorm_min()})
    for (double top_p : {0.9, 1.0})
      for (int64_t top_k : {0, 50}) {
        CAPTURE(t);
        CAPTURE(top_p);
        CAPTURE(top_k);
        Sampler s(SamplingParams{t, top_k, top_p, 1});
        CHECK(s.sample(logits) == top);
      }
}

TEST_CASE("sampling: non-finite logits never crash a draw, NaN and -infinity are never drawn, +infinity is the top") {
  const float nan = std::numeric_limits<float>::quiet_NaN(), inf = std::numeric_limits<float>::infinity();
  test::Rng rng(17);
  for (size_t vocab : {size_t{7}, size_t{3000}, size_t{151936}}) {
    CAPTURE(vocab);
    std::vector<float> logits = rng.normals(vocab);
    for (size_t i = 0; i < vocab; i += 3) logits[i] = nan;
    for (size_t i = 1; i < vocab; i += 3) logits[i] = -inf;
    for (const SamplingParams& sp : {SamplingParams{0.0, 0, 1.0, 1}, SamplingParams{0.8, 50, 0.95, 2},
                                     SamplingParams{1.0, 0, 0.9, 3}, SamplingParams{1.2, 0, 1.0, 4},
                                     SamplingParams{0.7, static_cast<int64_t>(vocab) - 1, 1.0, 5}}) {
      CAPTURE(sp.temperature);
      CAPTURE(sp.top_k);
      CAPTURE(sp.top_p);
      Sampler s(sp);
      for (int draw = 0; draw < 20; ++draw) {
        const int32_t t = s.sample(logits);
        REQUIRE(t >= 0);
        REQUIRE(static_cast<size_t>(t) < vocab);
        CHECK(t % 3 == 2);  // a finite logit
      }
      std::vector<float> top = logits;
      top[vocab - 1] = inf;
      CHECK(s.sample(top) == static_cast<int32_t>(vocab - 1));  // all the mass
    }
  }
  // Nothing but NaN and -infinity: the draw returns the first id rather than hang or crash.
  const std::vector<float> none{nan, -inf, nan, -inf};
  for (const SamplingParams& sp : {SamplingParams{0.0, 0, 1.0, 1}, SamplingParams{0.8, 2, 0.95, 2},
                                   SamplingParams{1.0, 0, 0.5, 3}, SamplingParams{1.0, 0, 1.0, 4}})
    CHECK(Sampler(sp).sample(none) == 0);
}
