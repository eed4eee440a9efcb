// Reading tokenizer.json (and tokenizer_config.json) into a TokenizerImpl.
#include <fmt/format.h>

#include <algorithm>

#include "tokenizer/impl.h"
#include "tokenizer/json_at.h"

namespace mstar::tok {
namespace {

// Reads "added_tokens" and gives each its id. The reference re-derives the
// ids as it adds the tokens one by one (the model's id when the content is
// in its vocabulary, else one past the largest so far, starting at the
// vocabulary size) and only warns when the file says otherwise, so a file
// whose ids disagree with that is ambiguous and refused.
void read_added(const JsonAt& list, TokenizerImpl& t) {
  const auto model_size = static_cast<int64_t>(t.model->vocab_size());
  int64_t max_added = -1;
  for (size_t i = 0; i < list.size(); ++i) {
    const JsonAt a = list[i];
    a.only_keys({"id", "content", "single_word", "lstrip", "rstrip", "normalized", "special"});
    AddedToken tok;
    tok.content = a.at("content").str();
    if (tok.content.empty()) a.at("content").fail("an empty added token is not supported");
    for (const char* flag : {"single_word", "lstrip", "rstrip"}) {
      const JsonAt f = a.at(flag);
      if (f.boolean()) f.unsupported(fmt::format("added tokens with {} are not supported", flag));
    }
    tok.special = a.at("special").boolean();
    tok.normalized = a.at("normalized").boolean();
    const JsonAt id = a.at("id");
    const int64_t given = id.integer();
    int64_t expected = t.model->find(tok.content);
    if (expected < 0) expected = max_added >= model_size || model_size == 0 ? max_added + 1 : model_size;
    if (given != expected)
      id.fail(fmt::format("id {} for {} but the reference would assign {} (ids of added tokens must follow the "
                          "vocabulary in order)",
                          given, a.at("content").shown(), expected));
    if (expected >= INT32_MAX) id.fail("id out of range");
    if (!t.added_by_content.insert(tok.content, static_cast<int32_t>(given)))
      a.at("content").fail(fmt::format("{} is added twice", a.at("content").shown()));
    max_added = std::max(max_added, given);
    tok.id = static_cast<int32_t>(given);
    t.added.push_back(std::move(tok));
  }
}

// bos_token / eos_token in tokenizer_config.json: a string, an object with
// "content", or null.
std::optional<int32_t> config_token(const TokenizerImpl& t, const JsonAt& config, const char* key) {
  auto v = config.find(key);
  if (!v) return std::nullopt;
  const std::string content = v->json().is_object() ? v->at("content").str() : v->str();
  if (int32_t id = t.added_by_content.find(content); id >= 0) return id;
  if (int32_t id = t.model->find(content); id >= 0) return id;
  v->fail(fmt::format("{} is not a token of the tokenizer", v->shown()));
}

}  // namespace

std::shared_ptr<TokenizerImpl> load_tokenizer(const nlohmann::json& tokenizer, const std::string& label,
                                              const nlohmann::json* config, const std::string& config_label) {
  auto t = std::make_shared<TokenizerImpl>();
  t->label = label;
  const JsonAt top(tokenizer, "", t->label);
  top.expect_object();
  top.only_keys({"version", "truncation", "padding", "added_tokens", "normalizer", "pre_tokenizer", "post_processor",
                 "decoder", "model"});
  if (auto v = top.find("version"); v && v->str() != "1.0") v->unsupported("the reference reads version 1.0");
  // Both change the ids encode returns.
  for (const char* key : {"truncation", "padding"})
    if (auto v = top.find(key)) v->unsupported("only null is supported");

  t->model = BpeModel::from_json(top.at("model"));
  const auto normalizer = top.find("normalizer");
  t->normalizer = Normalizer::from_json(normalizer ? &*normalizer : nullptr);
  const auto pre = top.find("pre_tokenizer");
  if (!pre) top.at("pre_tokenizer").fail("a byte-level BPE needs a ByteLevel pre-tokenizer (got null)");
  t->pre_tokenizer = PreTokenizer::from_json(*pre);
  const auto post = top.find("post_processor");
  t->post = PostProcessor::from_json(post ? &*post : nullptr);
  const auto decoder = top.find("decoder");
  if (!decoder) top.at("decoder").fail("a ByteLevel decoder is required (got null)");
  t->decoder = Decoder::from_json(*decoder);

  if (auto list = top.find("added_tokens")) read_added(*list, *t);

  int32_t max_id = t->model->max_id();
  for (const auto& a : t->added) max_id = std::max(max_id, a.id);
  const auto n = static_cast<size_t>(max_id + 1);
  t->kind.assign(n, TokenizerImpl::Kind::None);
  t->added_index.assign(n, -1);
  t->special.assign(n, false);
  for (int32_t id = 0; id <= t->model->max_id(); ++id) {
    if (const std::string* s = t->model->token(id)) {
      t->kind[id] = TokenizerImpl::Kind::Model;
      t->decoder.set_model(id, *s);
      ++t->vocab_size;
    }
  }
  for (size_t i = 0; i < t->added.size(); ++i) {
    const AddedToken& a = t->added[i];
    if (t->kind[a.id] == TokenizerImpl::Kind::None) ++t->vocab_size;
    t->kind[a.id] = TokenizerImpl::Kind::Added;
    t->added_index[a.id] = static_cast<int32_t>(i);
    t->decoder.set_added(a.id, a.content);
    if (a.special) {
      t->special[a.id] = true;
      t->specials.push_back({a.id, a.content});
    }
    if (a.normalized) {
      std::string buf;
      t->normal_matcher.add(t->normalizer.apply(a.content, buf), a.id);
    } else {
      t->raw_matcher.add(a.content, a.id);
    }
  }
  t->decoder.finish();

  for (int32_t id : t->post.template_ids())
    if (!t->valid_id(id))
      top.at("post_processor").fail(fmt::format("the template adds id {}, which has no token", id));

  t->bos = t->post.bos();
  t->eos = t->post.eos();
  if (config) {
    const JsonAt c(*config, "", config_label);
    c.expect_object();
    if (auto id = config_token(*t, c, "bos_token")) t->bos = id;
    if (auto id = config_token(*t, c, "eos_token")) t->eos = id;
  }
  if (t->bos) {
    std::vector<int32_t> probe;
    t->post.apply(probe, true);
    t->adds_bos = !probe.empty() && probe.front() == *t->bos;
  }
  return t;
}

}  // namespace mstar::tok
