#include "config/yaml_read.h"

#include <charconv>
#include <cmath>
#include <set>

#include <fmt/format.h>

namespace mstar {

void YamlContext::error(const YAML::Node& at, const std::string& message) {
  for (const auto& [node, label] : grafts_)
    if (node.is(at)) {
      diags_.error(label, 0, 0, message);
      return;
    }
  const YAML::Mark m = at.Mark();
  if (m.is_null()) diags_.error(file_, 0, 0, message);
  else diags_.error(file_, m.line + 1, m.column + 1, message);
}

const YAML::Node* MapEntries::find(const std::string& key) const {
  for (const auto& [k, v] : items)
    if (k == key) return &v;
  return nullptr;
}

const YAML::Node* MapEntries::key_node(const std::string& key) const {
  for (size_t i = 0; i < items.size(); ++i)
    if (items[i].first == key) return &key_nodes[i];
  return nullptr;
}

std::string describe(const YAML::Node& n) {
  if (!n || n.IsNull()) return "nothing";
  if (n.IsMap()) return "a mapping";
  if (n.IsSequence()) return "a sequence";
  const std::string& s = n.Scalar();
  if (s.size() > 48) return fmt::format("'{}...' ({} characters)", s.substr(0, 40), s.size());
  return fmt::format("'{}'", s);
}

namespace {

std::optional<MapEntries> walk_map(const YAML::Node& n, YamlContext& ctx, const std::string& path,
                                   const std::vector<std::string>* allowed) {
  if (!n.IsMap()) {
    ctx.error(n, fmt::format("{}: expected a mapping of keys, got {}", path, describe(n)));
    return std::nullopt;
  }
  MapEntries out;
  out.node = n;
  std::set<std::string> seen;
  for (const auto& kv : n) {
    if (!kv.first.IsScalar()) {
      ctx.error(kv.first, fmt::format("{}: a key must be a plain name, got {}", path, describe(kv.first)));
      continue;
    }
    const std::string key = kv.first.Scalar();
    if (!seen.insert(key).second) {
      ctx.error(kv.first, fmt::format("{}: duplicate key '{}'", path, key));
      continue;
    }
    if (allowed && std::find(allowed->begin(), allowed->end(), key) == allowed->end()) {
      const std::string near = did_you_mean(key, *allowed);
      ctx.error(kv.first, near.empty() ? fmt::format("{}: unknown key '{}'", path, key)
                                       : fmt::format("{}: unknown key '{}'; did you mean '{}'?", path, key, near));
      continue;
    }
    out.items.emplace_back(key, kv.second);
    out.key_nodes.push_back(kv.first);
  }
  return out;
}

}  // namespace

std::optional<MapEntries> read_map(const YAML::Node& n, YamlContext& ctx, const std::string& path,
                                   const std::vector<std::string>& allowed) {
  return walk_map(n, ctx, path, &allowed);
}

std::optional<MapEntries> read_any_map(const YAML::Node& n, YamlContext& ctx, const std::string& path) {
  return walk_map(n, ctx, path, nullptr);
}

bool read_yaml(const YAML::Node& n, YamlContext& ctx, const std::string& path, int64_t& out, Range range) {
  if (!n.IsScalar()) {
    ctx.error(n, fmt::format("{}: expected an integer, got {}", path, describe(n)));
    return false;
  }
  const std::string& s = n.Scalar();
  const char* b = s.data();
  const char* e = s.data() + s.size();
  if (b != e && *b == '+') ++b;
  int64_t v = 0;
  const auto [p, ec] = std::from_chars(b, e, v);
  if (ec == std::errc::result_out_of_range) {
    ctx.error(n, fmt::format("{}: {} is too large for an integer field (at most {})", path, s, INT64_MAX));
    return false;
  }
  if (ec != std::errc() || p != e || b == e) {
    ctx.error(n, fmt::format("{}: expected an integer, got '{}'", path, s));
    return false;
  }
  if (v < range.min || v > range.max) {
    const std::string what = range.max == INT64_MAX ? fmt::format("must be at least {}", range.min)
                                                    : fmt::format("must be in [{}, {}]", range.min, range.max);
    ctx.error(n, fmt::format("{} {}, got {}", path, what, v));
    return false;
  }
  out = v;
  return true;
}

bool read_yaml(const YAML::Node& n, YamlContext& ctx, const std::string& path, bool& out, Range) {
  if (n.IsScalar() && (n.Scalar() == "true" || n.Scalar() == "false")) {
    out = n.Scalar() == "true";
    return true;
  }
  ctx.error(n, fmt::format("{}: expected true or false, got {}", path, describe(n)));
  return false;
}

bool read_yaml(const YAML::Node& n, YamlContext& ctx, const std::string& path, DType& out, Range) {
  if (!n.IsScalar()) {
    ctx.error(n, fmt::format("{}: expected a dtype (f32, f16 or bf16), got {}", path, describe(n)));
    return false;
  }
  const std::string& s = n.Scalar();
  if (auto t = find_dtype(s)) out = *t;
  else {
    const std::string near = did_you_mean(s, {"f32", "f16", "bf16"});
    ctx.error(n, fmt::format("{}: unknown dtype '{}' (expected f32, f16 or bf16){}", path, s,
                             near.empty() ? "" : fmt::format("; did you mean '{}'?", near)));
    return false;
  }
  return true;
}

bool read_yaml(const YAML::Node& n, YamlContext& ctx, const std::string& path, std::string& out, Range) {
  if (!n.IsScalar() || n.Scalar().empty()) {
    ctx.error(n, fmt::format("{}: expected a non-empty string, got {}", path, describe(n)));
    return false;
  }
  out = n.Scalar();
  return true;
}

bool read_yaml(const YAML::Node& n, YamlContext& ctx, const std::string& path, double& out, Range) {
  if (n.IsScalar()) {
    const std::string& s = n.Scalar();
    double v = 0;
    const auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
    if (ec == std::errc() && p == s.data() + s.size() && std::isfinite(v)) {
      out = v;
      return true;
    }
  }
  ctx.error(n, fmt::format("{}: expected a number, got {}", path, describe(n)));
  return false;
}

bool read_yaml(const YAML::Node& n, YamlContext& ctx, const std::string& path, std::optional<int64_t>& out,
               Range range) {
  if (n.IsNull()) {
    out.reset();
    return true;
  }
  int64_t v = 0;
  if (!read_yaml(n, ctx, path, v, range)) return false;
  out = v;
  return true;
}

}  // namespace mstar
