#include "config/workload.h"

#include <fstream>
#include <sstream>

#include <fmt/format.h>

namespace mstar {

std::vector<int32_t> seeded_tokens(uint64_t seed, int64_t length, int64_t vocab) {
  std::vector<int32_t> t;
  for (int64_t i = 0; i < length; ++i) {
    uint64_t x = seed * 0x9E3779B97F4A7C15ull + static_cast<uint64_t>(i) + 0x632BE59BD9B4E019ull;
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
    x ^= x >> 31;
    t.push_back(static_cast<int32_t>(1 + x % static_cast<uint64_t>(vocab - 1)));
  }
  return t;
}

namespace {

bool read_tokens(const YAML::Node& n, YamlContext& ctx, const std::string& path, int64_t vocab,
                 std::vector<int32_t>& out) {
  if (!n.IsSequence()) {
    ctx.error(n, fmt::format("{}: expected a list of token ids, got {}", path, describe(n)));
    return false;
  }
  bool ok = true;
  for (size_t i = 0; i < n.size(); ++i) {
    int64_t t = 0;
    if (read_yaml(n[i], ctx, fmt::format("{}[{}]", path, i), t, Range{0, vocab - 1})) out.push_back(static_cast<int32_t>(t));
    else ok = false;
  }
  return ok;
}

bool read_voice(const std::string& name, const YAML::Node& n, YamlContext& ctx, const std::string& path, int64_t vocab,
                const std::filesystem::path& dir, VoiceSpec& v) {
  auto e = read_map(n, ctx, path, {"tokens", "file", "seed", "length"});
  if (!e) return false;
  v.name = name;
  const YAML::Node* tokens = e->find("tokens");
  const YAML::Node* file = e->find("file");
  const YAML::Node* seed = e->find("seed");
  if ((tokens != nullptr) + (file != nullptr) + (seed != nullptr) != 1) {
    ctx.error(n, fmt::format("{}: give exactly one of tokens, file or seed (with length)", path));
    return false;
  }
  if (tokens) return read_tokens(*tokens, ctx, path + ".tokens", vocab, v.tokens);
  if (file) {
    std::string f;
    if (!read_yaml(*file, ctx, path + ".file", f)) return false;
    std::ifstream in(dir / f);
    if (!in) {
      ctx.error(*file, fmt::format("{}.file: cannot read '{}'", path, f));
      return false;
    }
    std::string word;
    for (int64_t i = 0; in >> word; ++i) {
      int64_t t = -1;
      try {
        size_t used = 0;
        t = std::stoll(word, &used);
        if (used != word.size()) t = -1;
      } catch (const std::exception&) {
      }
      if (t < 0 || t >= vocab) {
        ctx.error(*file, fmt::format("{}.file: '{}': token {} is '{}', not an id in [0, {})", path, f, i, word, vocab));
        return false;
      }
      v.tokens.push_back(static_cast<int32_t>(t));
    }
    return true;
  }
  int64_t s = 0, length = 0;
  bool ok = read_yaml(*seed, ctx, path + ".seed", s, at_least(0));
  if (const YAML::Node* l = e->find("length")) ok = read_yaml(*l, ctx, path + ".length", length, Range{1, 1 << 20}) && ok;
  else {
    ctx.error(n, fmt::format("{}: a seeded voice needs a length", path));
    ok = false;
  }
  if (ok) v.tokens = seeded_tokens(static_cast<uint64_t>(s), length, vocab);
  return ok;
}

}  // namespace

bool read_workload(const YAML::Node& n, YamlContext& ctx, const ModelManifest& model,
                   const std::filesystem::path& config_dir, Workload& out) {
  const bool tts = model.kind == ModelKind::tts;
  std::vector<std::string> keys{"requests"};
  if (tts) keys.insert(keys.end(), {"chunk_tokens", "guidance_scale", "voices"});
  auto e = read_map(n, ctx, "workload", keys);
  if (!e) return false;
  bool ok = e->items.size() == n.size();
  if (const YAML::Node* v = e->find("chunk_tokens")) ok = read_yaml(*v, ctx, "workload.chunk_tokens", out.chunk_tokens, Range{1, 1 << 16}) && ok;
  if (const YAML::Node* v = e->find("guidance_scale")) ok = read_yaml(*v, ctx, "workload.guidance_scale", out.guidance_scale) && ok;
  const int64_t vocab = tts ? model.arch.tts.vocab_size : 0;
  if (const YAML::Node* v = e->find("voices")) {
    if (auto voices = read_any_map(*v, ctx, "workload.voices")) {
      for (const auto& [name, spec] : voices->items) {
        VoiceSpec vs;
        if (read_voice(name, spec, ctx, "workload.voices." + name, vocab, config_dir, vs)) out.voices.push_back(vs);
        else ok = false;
      }
    } else {
      ok = false;
    }
  }
  const YAML::Node* r = e->find("requests");
  if (!r) return ok;
  std::vector<std::string> rkeys{"count", "seed", "arrival_every"};
  if (tts) rkeys.insert(rkeys.end(), {"voices", "prompt_tokens", "max_tokens", "sampling"});
  else rkeys.push_back("frames");
  auto re = read_map(*r, ctx, "workload.requests", rkeys);
  if (!re) return false;
  ok = re->items.size() == r->size() && ok;
  int64_t count = 0, seed = 1, every = 0, prompt = 8, max_tokens = 64, frames = 8;
  auto get = [&](const char* key, int64_t& v, Range range) {
    if (const YAML::Node* x = re->find(key)) ok = read_yaml(*x, ctx, std::string("workload.requests.") + key, v, range) && ok;
  };
  if (!re->find("count")) {
    ctx.error(*r, "workload.requests: missing required key 'count'");
    return false;
  }
  get("count", count, Range{0, 100000});
  get("seed", seed, at_least(0));
  get("arrival_every", every, Range{0, 1 << 20});
  get("prompt_tokens", prompt, Range{1, 1 << 16});
  get("max_tokens", max_tokens, Range{1, 1 << 24});
  get("frames", frames, Range{1, 1 << 24});
  nlohmann::json sampling = nlohmann::json::object();
  if (const YAML::Node* s = re->find("sampling")) {
    if (auto se = read_map(*s, ctx, "workload.requests.sampling", {"temperature", "top_k", "top_p"})) {
      for (const auto& [k, v] : se->items) {
        double d = 0;
        if (read_yaml(v, ctx, "workload.requests.sampling." + k, d)) sampling[k] = k == "top_k" ? nlohmann::json(static_cast<int64_t>(d)) : nlohmann::json(d);
        else ok = false;
      }
    } else {
      ok = false;
    }
  }
  std::vector<std::string> voice_names;
  if (const YAML::Node* v = re->find("voices")) {
    if (!v->IsSequence() || v->size() == 0) {
      ctx.error(*v, fmt::format("workload.requests.voices: expected a list of voice names, got {}", describe(*v)));
      ok = false;
    } else {
      for (size_t i = 0; i < v->size(); ++i) {
        std::string s;
        if (read_yaml((*v)[i], ctx, fmt::format("workload.requests.voices[{}]", i), s)) voice_names.push_back(s);
        else ok = false;
      }
    }
  } else if (tts && count > 0) {
    ctx.error(*r, "workload.requests: missing required key 'voices'");
    ok = false;
  }
  if (!ok) return false;
  for (int64_t i = 0; i < count; ++i) {
    nlohmann::json q;
    q["arrival"] = i * every;
    if (tts) {
      q["id"] = fmt::format("req{:03}", i);
      q["voice"] = voice_names[static_cast<size_t>(i) % voice_names.size()];
      q["prompt"] = seeded_tokens(static_cast<uint64_t>(seed + i) * 7919u, prompt, vocab);
      q["max_tokens"] = max_tokens;
      nlohmann::json s = sampling;
      s["seed"] = seed + i;
      q["sampling"] = s;
    } else {
      q["id"] = fmt::format("roll{:03}", i);
      q["frames"] = frames;
      q["seed"] = seed + i;
    }
    out.requests.push_back(std::move(q));
  }
  return true;
}

}  // namespace mstar
