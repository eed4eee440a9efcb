#include "tokenizer/pre_tokenizer.h"

#include <fmt/format.h>

namespace mstar::tok {
namespace {

// The pattern the reference's ByteLevel pre-tokenizer splits with when
// use_regex is true (GPT-2's), in Oniguruma syntax like any other.
constexpr std::string_view kGpt2Pattern = R"('s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+)";

SplitBehavior behavior_of(const JsonAt& j) {
  const std::string b = j.str();
  if (b == "Removed") return SplitBehavior::Removed;
  if (b == "Isolated") return SplitBehavior::Isolated;
  if (b == "MergedWithPrevious") return SplitBehavior::MergedWithPrevious;
  if (b == "MergedWithNext") return SplitBehavior::MergedWithNext;
  if (b == "Contiguous") return SplitBehavior::Contiguous;
  j.unsupported("behaviors: Removed, Isolated, MergedWithPrevious, MergedWithNext, Contiguous");
}

struct Segment {
  size_t begin, end;
  bool match;
};

}  // namespace

PreTokenizer PreTokenizer::from_json(const JsonAt& top) {
  PreTokenizer p;
  std::vector<JsonAt> items;
  top.expect_object();
  if (top.at("type").str() == "Sequence") {
    top.only_keys({"type", "pretokenizers"});
    const JsonAt list = top.at("pretokenizers");
    for (size_t i = 0; i < list.size(); ++i) items.push_back(list[i]);
  } else {
    items.push_back(top);
  }
  const nlohmann::json gpt2_json = std::string(kGpt2Pattern);
  const JsonAt gpt2_where(gpt2_json, "(ByteLevel's GPT-2 pattern)", top.file());
  for (const JsonAt& j : items) {
    j.expect_object();
    const JsonAt type = j.at("type");
    const std::string t = type.str();
    if (!p.steps_.empty() && p.steps_.back().byte_level)
      type.fail(fmt::format("a {} step after ByteLevel is not supported (ByteLevel must come last)", t));
    if (t == "Split") {
      j.only_keys({"type", "pattern", "behavior", "invert"});
      const JsonAt pat = j.at("pattern");
      pat.expect_object();
      pat.only_keys({"String", "Regex"});
      Step s{.byte_level = false,
             .regex = [&] {
               if (auto r = pat.find("Regex")) return Regex::oniguruma(r->str(), *r);
               if (auto lit = pat.find("String")) return Regex::literal(lit->str(), *lit);
               pat.fail("expected {\"Regex\": ...} or {\"String\": ...}");
             }(),
             .behavior = behavior_of(j.at("behavior")),
             .invert = j.at("invert").boolean()};
      p.steps_.push_back(std::move(s));
    } else if (t == "ByteLevel") {
      // trim_offsets only moves offsets, never ids.
      j.only_keys({"type", "add_prefix_space", "trim_offsets", "use_regex"});
      const bool use_regex = j.flag("use_regex", true);
      Step s{.byte_level = true,
             .regex = Regex::oniguruma(kGpt2Pattern, gpt2_where),
             .add_prefix_space = j.at("add_prefix_space").boolean(),
             .use_regex = use_regex};
      p.steps_.push_back(std::move(s));
    } else {
      type.unsupported("supported pre-tokenizers: Split, ByteLevel, a Sequence of them");
    }
  }
  if (p.steps_.empty() || !p.steps_.back().byte_level)
    top.fail("a byte-level BPE needs a ByteLevel pre-tokenizer as its last step");
  return p;
}

void PreTokenizer::next(size_t k, std::string_view piece, const Emit& emit) const {
  if (piece.empty()) return;
  if (k + 1 < steps_.size()) {
    step(k + 1, piece, emit);
  } else {
    emit.call(emit.f, piece);
  }
}

void PreTokenizer::step(size_t k, std::string_view text, const Emit& emit) const {
  const Step& s = steps_[k];
  if (s.byte_level) {
    std::string prefixed;
    if (s.add_prefix_space && !text.starts_with(' ')) {
      prefixed.reserve(text.size() + 1);
      prefixed += ' ';
      prefixed += text;
      text = prefixed;
    }
    if (!s.use_regex) {
      next(k, text, emit);
      return;
    }
    std::vector<Span> m;
    s.regex.find_all(text, m);
    size_t prev = 0;
    for (const Span& sp : m) {
      next(k, text.substr(prev, sp.begin - prev), emit);
      next(k, text.substr(sp.begin, sp.end - sp.begin), emit);
      prev = sp.end;
    }
    next(k, text.substr(prev), emit);
    return;
  }

  // The reference's NormalizedString::split: segments covering the text,
  // each flagged as a match or not (flipped by invert), then merged or
  // dropped according to the behaviour.
  std::vector<Span> m;
  s.regex.find_all(text, m);
  std::vector<Segment> segs;
  segs.reserve(2 * m.size() + 1);
  size_t prev = 0;
  for (const Span& sp : m) {
    if (prev != sp.begin) segs.push_back({prev, sp.begin, s.invert});
    segs.push_back({sp.begin, sp.end, !s.invert});
    prev = sp.end;
  }
  if (prev != text.size()) segs.push_back({prev, text.size(), s.invert});

  std::vector<Segment> out;
  out.reserve(segs.size());
  bool previous_match = false;
  switch (s.behavior) {
    case SplitBehavior::Isolated:
      for (auto& g : segs) out.push_back({g.begin, g.end, false});
      break;
    case SplitBehavior::Removed:
      for (auto& g : segs)
        if (!g.match) out.push_back(g);
      break;
    case SplitBehavior::Contiguous:
      for (auto& g : segs) {
        if (g.match == previous_match && !out.empty()) {
          out.back().end = g.end;
        } else {
          out.push_back({g.begin, g.end, false});
        }
        previous_match = g.match;
      }
      break;
    case SplitBehavior::MergedWithPrevious:
      for (auto& g : segs) {
        if (g.match && !previous_match && !out.empty()) {
          out.back().end = g.end;
        } else {
          out.push_back({g.begin, g.end, false});
        }
        previous_match = g.match;
      }
      break;
    case SplitBehavior::MergedWithNext:
      for (size_t r = segs.size(); r-- > 0;) {
        const Segment& g = segs[r];
        if (g.match && !previous_match && !out.empty()) {
          out.back().begin = g.begin;
        } else {
          out.push_back({g.begin, g.end, false});
        }
        previous_match = g.match;
      }
      std::reverse(out.begin(), out.end());
      break;
  }
  for (const Segment& g : out) next(k, text.substr(g.begin, g.end - g.begin), emit);
}

}  // namespace mstar::tok
