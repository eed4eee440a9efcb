#include "config/resource_yaml.h"

#include <regex>

#include <fmt/format.h>

namespace mstar {

namespace {

bool read_affine(const YAML::Node& n, YamlContext& ctx, const std::string& path, SourceAffine& out) {
  if (n.IsMap()) {
    auto m = read_map(n, ctx, path, {"per_source", "plus"});
    if (!m) return false;
    bool ok = m->items.size() == n.size();
    out = {};
    if (const YAML::Node* v = m->find("per_source")) ok = read_yaml(*v, ctx, path + ".per_source", out.per_source) && ok;
    if (const YAML::Node* v = m->find("plus")) ok = read_yaml(*v, ctx, path + ".plus", out.plus) && ok;
    return ok;
  }
  if (n.IsScalar()) {
    std::string s;
    for (char c : n.Scalar())
      if (c != ' ') s += c;
    static const std::regex form(R"(^(?:(\d{1,9})\*)?source(?:([+-]\d{1,18}))?$)");
    std::smatch m;
    if (std::regex_match(s, m, form)) {
      out.per_source = m[1].matched ? std::stoll(m[1].str()) : 1;
      out.plus = m[2].matched ? std::stoll(m[2].str()) : 0;
      return true;
    }
    out.per_source = 0;
    if (s.find("source") == std::string::npos) return read_yaml(n, ctx, path, out.plus);
  }
  ctx.error(n, fmt::format("{}: expected a count, 'source + N', 'K * source + N' or {{per_source, plus}}, got {}", path,
                           describe(n)));
  return false;
}

bool read_geometry(const YAML::Node& n, YamlContext& ctx, const std::string& path, RingGeometry& g) {
  auto m = read_map(n, ctx, path, {"ring_frames", "ring_buckets", "pinned_dilation"});
  if (!m) return false;
  bool ok = m->items.size() == n.size();
  for (const char* key : {"ring_frames", "ring_buckets"})
    if (!m->find(key)) {
      ctx.error(n, fmt::format("{}: missing required key '{}'", path, key));
      ok = false;
    }
  if (const YAML::Node* v = m->find("ring_frames")) ok = read_yaml(*v, ctx, path + ".ring_frames", g.ring_frames, at_least(1)) && ok;
  if (const YAML::Node* v = m->find("ring_buckets")) ok = read_yaml(*v, ctx, path + ".ring_buckets", g.ring_buckets, at_least(1)) && ok;
  if (const YAML::Node* v = m->find("pinned_dilation"))
    ok = read_yaml(*v, ctx, path + ".pinned_dilation", g.pinned_dilation, at_least(1)) && ok;
  if (ok && g.ring_buckets > g.ring_frames) {
    ctx.error(*m->find("ring_buckets"), fmt::format("{}.ring_buckets {} exceeds ring_frames {}", path, g.ring_buckets,
                                                    g.ring_frames));
    ok = false;
  }
  return ok;
}

}  // namespace

bool read_yaml(const YAML::Node& n, YamlContext& ctx, const std::string& path, RetentionRule& out, Range) {
  auto m = read_map(n, ctx, path, {"sink", "window", "window_includes_step"});
  if (!m) return false;
  bool ok = m->items.size() == n.size();
  out = RetentionRule{};
  for (const char* key : {"sink", "window"})
    if (!m->find(key)) {
      ctx.error(n, fmt::format("{}: missing required key '{}'", path, key));
      ok = false;
    }
  if (const YAML::Node* v = m->find("sink")) ok = read_affine(*v, ctx, path + ".sink", out.sink) && ok;
  if (const YAML::Node* v = m->find("window")) ok = read_affine(*v, ctx, path + ".window", out.window) && ok;
  if (const YAML::Node* v = m->find("window_includes_step"))
    ok = read_yaml(*v, ctx, path + ".window_includes_step", out.window_includes_step) && ok;
  return ok;
}

bool read_yaml(const YAML::Node& n, YamlContext& ctx, const std::string& path, std::vector<RingGeometry>& out, Range) {
  out.clear();
  if (n.IsSequence()) {
    bool ok = true;
    for (size_t i = 0; i < n.size(); ++i) {
      RingGeometry g;
      ok = read_geometry(n[i], ctx, fmt::format("{}[{}]", path, i), g) && ok;
      out.push_back(g);
    }
    if (ok && static_cast<int64_t>(out.size()) != ctx.layers_hint) {
      ctx.error(n, fmt::format("{}: {} geometries for {} layers", path, out.size(), ctx.layers_hint));
      return false;
    }
    return ok;
  }
  auto top = read_map(n, ctx, path, {"pattern"});
  if (!top) return false;
  const YAML::Node* pat = top->find("pattern");
  if (!pat) {
    ctx.error(n, fmt::format("{}: expected one geometry per layer or {{pattern: ...}}", path));
    return false;
  }
  const std::string pp = path + ".pattern";
  auto m = read_map(*pat, ctx, pp, {"every", "offset", "global", "local"});
  if (!m) return false;
  bool ok = m->items.size() == pat->size();
  int64_t every = 0, offset = -1;
  RingGeometry global, local;
  for (const char* key : {"every", "global", "local"})
    if (!m->find(key)) {
      ctx.error(*pat, fmt::format("{}: missing required key '{}'", pp, key));
      ok = false;
    }
  if (const YAML::Node* v = m->find("every")) ok = read_yaml(*v, ctx, pp + ".every", every, Range{1, 1 << 20}) && ok;
  if (const YAML::Node* v = m->find("offset")) ok = read_yaml(*v, ctx, pp + ".offset", offset, at_least(0)) && ok;
  if (const YAML::Node* v = m->find("global")) ok = read_geometry(*v, ctx, pp + ".global", global) && ok;
  if (const YAML::Node* v = m->find("local")) ok = read_geometry(*v, ctx, pp + ".local", local) && ok;
  if (!ok) return false;
  if (offset < 0) offset = every - 1;
  if (offset >= every) {
    ctx.error(*m->find("offset"), fmt::format("{}.offset {} must be below every ({})", pp, offset, every));
    return false;
  }
  for (int64_t l = 0; l < ctx.layers_hint; ++l) out.push_back(l % every == offset ? global : local);
  return true;
}

}  // namespace mstar
