// The models end to end through the resources, against plain paths that
// need no cache: full-history attention for tts, a naive per-frame store for
// world.
#include <doctest/doctest.h>

#include <filesystem>
#include <functional>
#include <fstream>
#include <map>
#include <random>

#include "core/errors.h"
#include "models/safetensors.h"
#include "models/sampling.h"
#include "models/transformer.h"
#include "models/tts_model.h"
#include "models/weights.h"
#include "models/world_model.h"
#include "resources/ring_kv/manager.h"
#include "support.h"

using namespace mstar;
namespace fs = std::filesystem;

namespace {

ModelManifest tts_manifest(const std::string& positions = "stream") {
  ModelManifest m;
  m.name = "test-tts";
  m.kind = ModelKind::tts;
  m.arch.common = CommonArchitecture{2, 32, 2, 1, 16, 48, 10000, positions};
  m.arch.tts = TtsArchitecture{50, 49};
  m.weights.dummy_seed = 5;
  return m;
}

BoundedKVSpec tts_kv(const ModelManifest& m, SinkWindow pol, int64_t slots = 4) {
  BoundedKVConfig c;
  c.num_layers = m.arch.common.layers;
  c.num_heads = m.arch.common.kv_heads;
  c.head_dim = m.arch.common.head_dim;
  c.rows_per_request = 1;
  c.max_source_len = 16;
  c.retention = pol;
  c.max_slots = slots;
  c.dtype = DType::f32;
  return BoundedKVSpec{"kv", {}, c};
}

// Greedy decoding through the bounded cache: prompt prefill, then one token a step.
std::vector<int32_t> greedy_through_cache(const TtsModel& model, BoundedKVManager& kv, const std::vector<int32_t>& voice,
                                          const std::vector<int32_t>& prompt, int steps,
                                          std::vector<std::vector<float>>* all_logits = nullptr) {
  const auto& a = model.arch().common;
  const TtsModel::SourceKV src = model.prefill_source(voice, 1);
  const Shape sh{a.layers, 1, a.kv_heads, src.len, a.head_dim};
  kv.register_source(1, f32_view(src.k.data(), sh), f32_view(src.v.data(), sh));
  kv.ingest_request("r");
  std::vector<int32_t> out, feed = prompt;
  int64_t written = 0;
  std::vector<float> logits;
  for (int s = 0; s < steps; ++s) {
    BoundedKVStep st{{{"r", "step", static_cast<int64_t>(feed.size())}}, {{"r", {src.len, written, 1}}}};
    StepContext ctx;
    ctx.add_rows("r", 1);
    REQUIRE(kv.admit(st, ctx).ok());
    const BoundedKVPlan plan = kv.plan(st, ctx);
    model.step(kv, st, ctx, plan, {feed}, logits);
    kv.commit(st, ctx);
    if (all_logits) all_logits->push_back(logits);
    written += static_cast<int64_t>(feed.size());
    const auto t = static_cast<int32_t>(std::max_element(logits.begin(), logits.end()) - logits.begin());
    out.push_back(t);
    feed = {t};
  }
  return out;
}

}  // namespace

TEST_CASE("tts: with a window as long as the stream, greedy tokens equal the full-history path") {
  for (const char* positions : {"stream", "cache"})
    for (Backend b : {Backend::reference, Backend::cpu}) {
      CAPTURE(positions);
      CAPTURE(to_string(b));
      const ModelManifest m = tts_manifest(positions);
      const Weights w = Weights::from_manifest(m);
      const TtsModel model(m, w, b);
      BoundedKVManager kv(tts_kv(m, SinkWindow{4, 64}), BoundedKVOptions{b, 2});
      const std::vector<int32_t> voice{3, 14, 15, 9, 26, 5}, prompt{7, 1, 8, 2, 8};
      const auto cached = greedy_through_cache(model, kv, voice, prompt, 24);
      std::vector<int32_t> history = prompt, plain;
      for (int s = 0; s < 24; ++s) {
        const auto logits = model.full_history_logits(voice, history);
        const auto t = static_cast<int32_t>(std::max_element(logits.begin(), logits.end()) - logits.begin());
        plain.push_back(t);
        history.push_back(t);
      }
      CHECK(cached == plain);
    }
}

TEST_CASE("tts: a small window streams 20 times its length with memory_bytes unchanged") {
  for (const char* positions : {"stream", "cache"}) {
    const ModelManifest m = tts_manifest(positions);
    const Weights w = Weights::from_manifest(m);
    const TtsModel model(m, w, Backend::cpu);
    BoundedKVManager kv(tts_kv(m, SinkWindow{2, 8}), BoundedKVOptions{Backend::cpu, 1});
    const std::size_t before = kv.memory_bytes() + 2 * 1 * 1 * 6 * 16 * 4 * 2;  // plus the 6-entry source to come
    const auto tokens = greedy_through_cache(model, kv, {1, 2, 3, 4, 5, 6}, {9, 9}, 20 * 10);
    CHECK(tokens.size() == 200u);
    CHECK(kv.memory_bytes() == before);
  }
}

TEST_CASE("tts: cpu and reference backends agree on logits within 1e-3") {
  const ModelManifest m = tts_manifest();
  const Weights w = Weights::from_manifest(m);
  std::vector<std::vector<float>> ref_logits, cpu_logits;
  for (Backend b : {Backend::reference, Backend::cpu}) {
    const TtsModel model(m, w, b);
    BoundedKVManager kv(tts_kv(m, SinkWindow{2, 6}), BoundedKVOptions{b, 2});
    greedy_through_cache(model, kv, {4, 4, 2}, {1, 2, 3}, 30, b == Backend::reference ? &ref_logits : &cpu_logits);
  }
  for (size_t s = 0; s < ref_logits.size(); ++s) CHECK(test::max_abs_diff(ref_logits[s], cpu_logits[s]) <= 1e-3f);
}

TEST_CASE("weights: the safetensors file the tool writes loads back to the same tokens; broken files are refused") {
  const ModelManifest m = tts_manifest();
  const Weights dummy = Weights::from_manifest(m);
  const fs::path dir = fs::temp_directory_path() / fmt::format("mstar-weights-test-{}", ::getpid());
  fs::create_directories(dir);
  const fs::path file = dir / "w.safetensors";
  write_weights(dummy, m.kind, m.arch, file, DType::f32);
  const Weights loaded = Weights::load_safetensors(file, m.kind, m.arch);
  for (const auto& [name, t] : dummy.all())
    CHECK(std::memcmp(t.data(), loaded.get(name), t.bytes()) == 0);
  const TtsModel a(m, dummy, Backend::cpu), b(m, loaded, Backend::cpu);
  BoundedKVManager kva(tts_kv(m, SinkWindow{2, 8}), BoundedKVOptions{Backend::cpu, 1});
  BoundedKVManager kvb(tts_kv(m, SinkWindow{2, 8}), BoundedKVOptions{Backend::cpu, 1});
  CHECK(greedy_through_cache(a, kva, {1, 2, 3}, {4, 5}, 20) == greedy_through_cache(b, kvb, {1, 2, 3}, {4, 5}, 20));

  // bf16 storage loads too (rounded).
  write_weights(dummy, m.kind, m.arch, file, DType::bf16);
  CHECK(Weights::load_safetensors(file, m.kind, m.arch).get("head.weight")[3] ==
        round_to(DType::bf16, dummy.get("head.weight")[3]));

  auto tensors_with = [&](auto&& edit) {
    std::vector<std::vector<float>> bufs;
    std::vector<TensorData> data;
    for (const auto& t : expected_tensors(m.kind, m.arch)) {
      bufs.emplace_back(dummy.get(t.name), dummy.get(t.name) + t.numel());
      data.push_back({t.name, DType::f32, t.shape, bufs.back().data(), static_cast<size_t>(t.numel()) * 4});
    }
    edit(data);
    write_safetensors(file, data);
    try {
      Weights::load_safetensors(file, m.kind, m.arch);
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
  CHECK(tensors_with([](auto& d) { d[0].dtype = DType::f16; d[0].bytes /= 2; }) == "loaded");  // f16 files load
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
    CHECK_THROWS_WITH_AS(Weights::load_safetensors(file, m.kind, m.arch),
                         (file.string() + ": tensor 'embed.weight' has dtype I32 (expected F32, F16 or BF16)").c_str(),
                         InputError);
  }
  fs::remove_all(dir);
}

namespace {

ModelManifest world_manifest() {
  ModelManifest m;
  m.name = "test-world";
  m.kind = ModelKind::world;
  m.arch.common = CommonArchitecture{2, 32, 2, 1, 16, 32, 10000, "stream"};
  m.arch.world = WorldArchitecture{4, 3, 2, 2, 4, 2, 2, 3, 3};
  m.weights.dummy_seed = 9;
  return m;
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

// The test's own store: every committed frame's keys and values per
// rollout and layer, and attention over the frames the ring rule retains.
struct NaiveFrames {
  const RingKVConfig& c;
  std::map<std::string, std::vector<std::map<int64_t, std::pair<std::vector<float>, std::vector<float>>>>> kv;

  WorldModel::AttentionFactory factory(const std::vector<std::string>& rids, const std::vector<int64_t>& frames) {
    return [this, rids, frames](bool commit) -> WorldModel::FrameAttention {
      return [this, rids, frames, commit](int64_t l, const float* q, const float* k, const float* v, float* o) {
        const int64_t T = c.tokens_per_frame, hd = c.head_dim;
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
          keys.insert(keys.end(), k + static_cast<int64_t>(b) * T * hd, k + static_cast<int64_t>(b + 1) * T * hd);
          vals.insert(vals.end(), v + static_cast<int64_t>(b) * T * hd, v + static_cast<int64_t>(b + 1) * T * hd);
          const auto nk = static_cast<int64_t>(keys.size()) / hd;
          dense_attention(q + static_cast<int64_t>(b) * T * 2 * hd, T, keys.data(), vals.data(), nk, 2, 1, hd,
                          [nk](int64_t) { return nk; }, o + static_cast<int64_t>(b) * T * 2 * hd);
          if (commit)
            store[static_cast<size_t>(l)][f] = {std::vector<float>(k + static_cast<int64_t>(b) * T * hd, k + static_cast<int64_t>(b + 1) * T * hd),
                                                std::vector<float>(v + static_cast<int64_t>(b) * T * hd, v + static_cast<int64_t>(b + 1) * T * hd)};
        }
      };
    };
  }
};

std::vector<float> noise_for(uint64_t seed, size_t n) {
  std::mt19937_64 g(seed);
  std::normal_distribution<float> d;
  std::vector<float> x(n);
  for (auto& v : x) v = d(g);
  return x;
}

}  // namespace

TEST_CASE("world: frames through the ring equal a naive store of the retained frames, both backends") {
  const ModelManifest m = world_manifest();
  const Weights w = Weights::from_manifest(m);
  for (Backend b : {Backend::reference, Backend::cpu}) {
    CAPTURE(to_string(b));
    const WorldModel model(m, w, b);
    RingKVManager kv(world_kv(), RingKVOptions{b, 2});
    NaiveFrames naive{kv.config(), {}};
    kv.ingest_request("a");
    kv.ingest_request("b");
    for (int64_t f = 0; f < 14; ++f) {
      // Interleaved rollouts: b starts later and skips no frame of its own.
      std::vector<std::string> rids{"a"};
      std::vector<int64_t> frames{f};
      if (f >= 3) rids.push_back("b"), frames.push_back(f - 3);
      RingKVStep st;
      StepContext ctx;
      for (size_t i = 0; i < rids.size(); ++i) {
        st.segments.push_back({rids[i], "frame", 4});
        st.frames[rids[i]] = frames[i];
        ctx.add_rows(rids[i], 1);
      }
      REQUIRE(kv.admit(st, ctx).ok());
      const RingPlan plan = kv.plan(st, ctx);
      const auto B = static_cast<int64_t>(rids.size());
      const auto noise = noise_for(static_cast<uint64_t>(f), static_cast<size_t>(B * 4 * 4));
      const std::vector<float> controls(static_cast<size_t>(B * 3), 0.5f);
      const auto ring = model.generate(B, frames, noise, controls.data(), model.ring_attention(kv, plan, frames));
      const auto plain = model.generate(B, frames, noise, controls.data(), naive.factory(rids, frames));
      kv.commit(st, ctx);
      CHECK(test::max_abs_diff(ring, plain) <= 1e-4f);
    }
  }
}

namespace {

// One frame of rollout "a" through the ring: admit, plan, optional extra
// work on the plan, generate, commit.
std::vector<float> roll_frame(const WorldModel& model, RingKVManager& kv, int64_t f, float control,
                              const std::function<void(const RingPlan&, const std::vector<int64_t>&)>& before = {}) {
  RingKVStep st{{{"a", "frame", 4}}, {{"a", f}}};
  StepContext ctx;
  ctx.add_rows("a", 1);
  REQUIRE(kv.admit(st, ctx).ok());
  const RingPlan plan = kv.plan(st, ctx);
  const std::vector<int64_t> frames{f};
  if (before) before(plan, frames);
  const std::vector<float> controls(3, control);
  auto out = model.generate(1, frames, noise_for(static_cast<uint64_t>(f), 16), controls.data(),
                            model.ring_attention(kv, plan, frames));
  kv.commit(st, ctx);
  return out;
}

}  // namespace

TEST_CASE("world: denoising passes that do not commit never change what a later frame sees") {
  const ModelManifest m = world_manifest();
  const Weights w = Weights::from_manifest(m);
  const WorldModel model(m, w, Backend::cpu);
  std::vector<std::vector<float>> runs[2];
  for (int junk = 0; junk < 2; ++junk) {
    RingKVManager kv(world_kv(), RingKVOptions{Backend::cpu, 1});
    kv.ingest_request("a");
    for (int64_t f = 0; f < 10; ++f)
      runs[junk].push_back(roll_frame(model, kv, f, 0.25f, [&](const RingPlan& plan, const std::vector<int64_t>& frames) {
        if (!junk || f % 3 != 1) return;
        for (int64_t l = 0; l < 2; ++l) {  // extra passes with junk inputs, not committed
          auto k = noise_for(99 + static_cast<uint64_t>(f), 4 * 16), v = noise_for(7 + static_cast<uint64_t>(f), 4 * 16);
          (void)kv.upsert(l, plan, f32_view(k.data(), Shape{1, 1, 4, 16}), f32_view(v.data(), Shape{1, 1, 4, 16}), frames,
                          UpsertOptions{false, true});
        }
      }));
  }
  for (size_t f = 0; f < runs[0].size(); ++f) CHECK(runs[0][f] == runs[1][f]);
}

TEST_CASE("world: cpu and reference backends agree within 1e-3") {
  const ModelManifest m = world_manifest();
  const Weights w = Weights::from_manifest(m);
  std::vector<std::vector<float>> out[2];
  for (int i = 0; i < 2; ++i) {
    const Backend b = i == 0 ? Backend::reference : Backend::cpu;
    const WorldModel model(m, w, b);
    RingKVManager kv(world_kv(), RingKVOptions{b, 2});
    kv.ingest_request("a");
    for (int64_t f = 0; f < 8; ++f) out[i].push_back(roll_frame(model, kv, f, 0.1f));
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
