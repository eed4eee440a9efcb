#include "engine/workload.h"

#include <charconv>
#include <sstream>

#include <fmt/format.h>

#include "core/errors.h"
#include "core/files.h"

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

// A voice file holds token ids as text: a prompt of a million tokens is
// about 7 MB.
constexpr std::size_t kMaxVoiceFileBytes = std::size_t{16} << 20;

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

bool read_voice(const YAML::Node& n, YamlContext& ctx, const std::string& path, int64_t vocab,
                const Tokenizer* tokenizer, const std::filesystem::path& dir, std::vector<int32_t>& v) {
  auto e = read_map(n, ctx, path, {"text", "tokens", "file", "seed", "length"});
  if (!e) return false;
  const YAML::Node* text = e->find("text");
  const YAML::Node* tokens = e->find("tokens");
  const YAML::Node* file = e->find("file");
  const YAML::Node* seed = e->find("seed");
  if ((text || tokens) + (file != nullptr) + (seed != nullptr) != 1) {
    ctx.error(n, fmt::format("{}: give text and/or tokens, or a file, or a seed (with length)", path));
    return false;
  }
  if (text || tokens) {
    bool ok = true;
    if (text) {
      std::string s;
      if (!read_yaml(*text, ctx, path + ".text", s)) return false;
      if (!tokenizer) {
        ctx.error(*text, fmt::format("{}.text: the model has no tokenizer (name one in its manifest), so a voice is "
                                     "token ids",
                                     path));
        return false;
      }
      try {
        v = tokenizer->encode(s, true);
      } catch (const InputError& err) {
        ctx.error(*text, fmt::format("{}.text: {}", path, err.what()));
        return false;
      }
    }
    if (tokens) ok = read_tokens(*tokens, ctx, path + ".tokens", vocab, v);
    return ok;
  }
  if (file) {
    std::string f;
    if (!read_yaml(*file, ctx, path + ".file", f)) return false;
    std::string contents;
    try {
      contents = read_regular_file(dir / f, kMaxVoiceFileBytes, fmt::format("{}.file '{}'", path, f));
    } catch (const InputError& err) {
      ctx.error(*file, err.what());
      return false;
    }
    std::istringstream in(contents);
    std::string word;
    for (int64_t i = 0; in >> word; ++i) {
      int64_t t = -1;
      const auto [end, ec] = std::from_chars(word.data(), word.data() + word.size(), t);
      if (ec != std::errc() || end != word.data() + word.size()) t = -1;
      if (t < 0 || t >= vocab) {
        ctx.error(*file, fmt::format("{}.file: '{}': token {} is '{}', not an id in [0, {})", path, f, i,
                                     word.substr(0, 40), vocab));
        return false;
      }
      v.push_back(static_cast<int32_t>(t));
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
  if (ok) v = seeded_tokens(static_cast<uint64_t>(s), length, vocab);
  return ok;
}

}  // namespace

bool read_voices(const YAML::Node& n, YamlContext& ctx, int64_t vocab, const Tokenizer* tokenizer,
                 const std::filesystem::path& dir, nlohmann::json& out) {
  auto voices = read_any_map(n, ctx, "workload.voices");
  if (!voices) return false;
  bool ok = true;
  out = nlohmann::json::object();
  for (const auto& [name, spec] : voices->items) {
    std::vector<int32_t> tokens;
    if (read_voice(spec, ctx, "workload.voices." + name, vocab, tokenizer, dir, tokens)) out[name] = tokens;
    else ok = false;
  }
  return ok && voices->items.size() == n.size();
}

bool read_requests_block(const YAML::Node& n, YamlContext& ctx, const std::vector<std::string>& keys,
                         RequestsBlock& out, const std::function<bool(const std::string&, const YAML::Node&)>& read) {
  std::vector<std::string> allowed{"count", "seed", "arrival_every"};
  allowed.insert(allowed.end(), keys.begin(), keys.end());
  auto e = read_map(n, ctx, "workload.requests", allowed);
  if (!e) return false;
  bool ok = e->items.size() == n.size();
  if (!e->find("count")) {
    ctx.error(n, "workload.requests: missing required key 'count'");
    return false;
  }
  for (const auto& [k, v] : e->items) {
    const std::string path = "workload.requests." + k;
    if (k == "count") ok = read_yaml(v, ctx, path, out.count, Range{0, 100000}) && ok;
    else if (k == "seed") ok = read_yaml(v, ctx, path, out.seed, Range{0, INT32_MAX}) && ok;
    else if (k == "arrival_every") ok = read_yaml(v, ctx, path, out.arrival_every, Range{0, 1 << 20}) && ok;
    else ok = read(k, v) && ok;
  }
  return ok;
}

}  // namespace mstar
