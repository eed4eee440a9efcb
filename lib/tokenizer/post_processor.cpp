#include "tokenizer/post_processor.h"

#include <fmt/format.h>

namespace mstar::tok {

PostProcessor::Template PostProcessor::read_template(const JsonAt& list, const JsonAt& special_tokens, bool pair) {
  Template t;
  bool has_a = false, has_b = false;
  for (size_t i = 0; i < list.size(); ++i) {
    const JsonAt piece = list[i];
    piece.expect_object();
    piece.only_keys({"Sequence", "SpecialToken"});
    if (auto seq = piece.find("Sequence")) {
      seq->only_keys({"id", "type_id"});
      const JsonAt id = seq->at("id");
      const std::string which = id.str();
      if (which == "A") {
        has_a = true;
      } else if (which == "B" && pair) {
        has_b = true;
      } else {
        id.unsupported(pair ? "expected A or B" : "the single template may only use $A");
      }
      if (which == "A") t.push_back({.sequence = true, .ids = {}});
    } else if (auto sp = piece.find("SpecialToken")) {
      sp->only_keys({"id", "type_id"});
      const JsonAt id = sp->at("id");
      const auto entry = special_tokens.find(id.str());
      if (!entry) id.fail(fmt::format("{} is not in post_processor.special_tokens", id.shown()));
      entry->only_keys({"id", "ids", "tokens"});
      const JsonAt ids = entry->at("ids");
      Piece p;
      for (size_t k = 0; k < ids.size(); ++k) {
        const int64_t v = ids[k].integer();
        if (v < 0 || v >= INT32_MAX) ids[k].fail(fmt::format("id {} is out of range", v));
        p.ids.push_back(static_cast<int32_t>(v));
      }
      if (entry->at("tokens").size() != p.ids.size()) entry->fail("ids and tokens differ in length");
      t.push_back(std::move(p));
    } else {
      piece.fail("expected {\"Sequence\": ...} or {\"SpecialToken\": ...}");
    }
  }
  if (!has_a) list.fail("the template never uses $A");
  if (pair && !has_b) list.fail("the pair template never uses $B");
  return t;
}

PostProcessor PostProcessor::from_json(const JsonAt* j) {
  PostProcessor pp;
  if (!j) return pp;
  std::vector<JsonAt> items;
  j->expect_object();
  if (j->at("type").str() == "Sequence") {
    j->only_keys({"type", "processors"});
    const JsonAt list = j->at("processors");
    for (size_t i = 0; i < list.size(); ++i) items.push_back(list[i]);
  } else {
    items.push_back(*j);
  }
  for (const JsonAt& p : items) {
    p.expect_object();
    const JsonAt type = p.at("type");
    const std::string t = type.str();
    if (t == "ByteLevel") {
      p.only_keys({"type", "add_prefix_space", "trim_offsets", "use_regex"});
    } else if (t == "TemplateProcessing") {
      p.only_keys({"type", "single", "pair", "special_tokens"});
      const JsonAt special = p.at("special_tokens");
      special.expect_object();
      pp.singles_.push_back(read_template(p.at("single"), special, false));
      // The pair template is never applied (mstar encodes single texts), but
      // it is read so that a malformed one is reported.
      read_template(p.at("pair"), special, true);
    } else {
      type.unsupported("supported post-processors: null, ByteLevel, TemplateProcessing, a Sequence of them");
    }
  }
  if (!pp.singles_.empty()) {
    const Template& t = pp.singles_.front();
    for (size_t i = 0; i < t.size(); ++i) {
      if (!t[i].sequence) continue;
      if (i > 0 && t[i - 1].ids.size() == 1) pp.bos_ = t[i - 1].ids[0];
      if (i + 1 < t.size() && t[i + 1].ids.size() == 1) pp.eos_ = t[i + 1].ids[0];
      break;
    }
  }
  return pp;
}

void PostProcessor::apply(std::vector<int32_t>& ids, bool add_special_tokens) const {
  if (!add_special_tokens) return;
  for (const Template& t : singles_) {
    std::vector<int32_t> out;
    out.reserve(ids.size() + 4);
    for (const Piece& p : t) {
      if (p.sequence) {
        out.insert(out.end(), ids.begin(), ids.end());
      } else {
        out.insert(out.end(), p.ids.begin(), p.ids.end());
      }
    }
    ids = std::move(out);
  }
}

std::vector<int32_t> PostProcessor::template_ids() const {
  std::vector<int32_t> out;
  for (const Template& t : singles_)
    for (const Piece& p : t) out.insert(out.end(), p.ids.begin(), p.ids.end());
  return out;
}

}  // namespace mstar::tok
