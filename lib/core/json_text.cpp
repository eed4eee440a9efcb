#include "core/json_text.h"

#include <fmt/format.h>

#include "core/errors.h"

namespace mstar {

namespace {

std::pair<int64_t, int64_t> line_column(std::string_view s, std::size_t offset) {
  int64_t line = 1, col = 1;
  for (std::size_t i = 0; i < offset && i < s.size(); ++i) {
    if (s[i] == '\n') ++line, col = 1;
    else ++col;
  }
  return {line, col};
}

// nlohmann's messages start "[json.exception.parse_error.101] "; the rest
// ("parse error at line 1, column 2: syntax error ...") is what a person needs.
std::string without_prefix(const char* what) {
  std::string_view s(what);
  if (const auto p = s.find("] "); !s.empty() && s[0] == '[' && p != std::string_view::npos) s.remove_prefix(p + 2);
  return std::string(s);
}

}  // namespace

std::optional<std::size_t> json_too_deep(std::string_view text, int max_depth) {
  int depth = 0;
  bool in_string = false;
  for (std::size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (in_string) {
      if (c == '\\') ++i;  // the escaped byte cannot end the string
      else if (c == '"') in_string = false;
      continue;
    }
    if (c == '"') in_string = true;
    else if (c == '[' || c == '{') {
      if (++depth > max_depth) return i;
    } else if ((c == ']' || c == '}') && depth > 0) {
      --depth;
    }
  }
  return std::nullopt;
}

std::optional<nlohmann::json> try_parse_json(std::string_view text, std::string& why, int max_depth) {
  // The JSON library reads a NUL byte as the end of its input, so
  // `{...}\0anything` would parse as its first object; JSON allows no raw
  // NUL anywhere (inside a string one must be escaped).
  if (const auto nul = text.find('\0'); nul != std::string_view::npos) {
    const auto [line, col] = line_column(text, nul);
    why = fmt::format("not valid JSON: a NUL byte at line {}, column {}", line, col);
    return std::nullopt;
  }
  if (const auto at = json_too_deep(text, max_depth)) {
    const auto [line, col] = line_column(text, *at);
    why = fmt::format("nests deeper than {} levels (line {}, column {})", max_depth, line, col);
    return std::nullopt;
  }
  try {
    return nlohmann::json::parse(text);
  } catch (const nlohmann::json::exception& e) {
    why = "not valid JSON: " + without_prefix(e.what());
    return std::nullopt;
  }
}

nlohmann::json parse_json(std::string_view text, const std::string& where, int max_depth) {
  std::string why;
  auto j = try_parse_json(text, why, max_depth);
  if (!j) throw InputError(fmt::format("{}: {}", where, why));
  return std::move(*j);
}

std::string dump_json(const nlohmann::json& j, int indent) {
  return j.dump(indent, ' ', false, nlohmann::json::error_handler_t::replace);
}

std::string json_excerpt(const nlohmann::json& j, std::size_t max) {
  std::string s = dump_json(j);
  if (s.size() <= max) return s;
  // Cut at a character boundary, so the excerpt stays UTF-8.
  std::size_t cut = max;
  while (cut > 0 && (static_cast<unsigned char>(s[cut]) & 0xC0) == 0x80) --cut;
  s.resize(cut);
  return s + "...";
}

}  // namespace mstar
