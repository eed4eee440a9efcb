#include "tokenizer/gguf_vocab.h"

#include <fmt/format.h>

#include <algorithm>

#include "core/errors.h"
#include "core/gguf_write.h"

namespace mstar::tok {

namespace {

using nlohmann::json;

// The pre-tokenizers of the models GGUF names by tokenizer.ggml.pre, as
// their published tokenizer.json files define them: a split by the model's
// pattern, then byte-level characters. llama-bpe is Llama 3's (numbers in
// runs of up to three digits), qwen2 Qwen2's (single digits, NFC first).
struct PreTokenizer {
  const char* name;
  const char* pattern;
  bool nfc;            // an NFC normalizer before it
  bool ignore_merges;  // a word that is a whole token is that token, unmerged
};

constexpr PreTokenizer kPreTokenizers[] = {
    {"llama-bpe",
     R"((?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)",
     false, true},
    {"qwen2",
     R"((?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)",
     true, false},
};

// GGUF's token types (llama.cpp's llama_token_type).
enum TokenType : int64_t { kNormal = 1, kUnknown = 2, kControl = 3, kUserDefined = 4, kUnused = 5, kByte = 6 };

const GgufValue& array_of(const GgufFile& f, const char* key, GgufType element) {
  const GgufValue* v = f.find(key);
  if (!v || v->type != GgufType::array || v->element != element)
    throw ConfigError(fmt::format("{}: metadata '{}' is {} (an array of {})", f.path.string(), key,
                                  v ? v->describe() : "missing", to_string(element)));
  return *v;
}

}  // namespace

GgufVocab gguf_vocab(const GgufFile& f) {
  const std::string file = f.path.string();
  const GgufValue* model = f.find("tokenizer.ggml.model");
  if (!model) throw ConfigError(fmt::format("{}: holds no tokenizer (no metadata 'tokenizer.ggml.model')", file));
  if (model->type != GgufType::string || model->text != "gpt2")
    throw ConfigError(fmt::format("{}: metadata 'tokenizer.ggml.model' is {} (mstar reads gpt2-style byte-level BPE)",
                                  file, model->describe()));
  const GgufValue* pre_v = f.find("tokenizer.ggml.pre");
  const std::string pre_name = pre_v && pre_v->type == GgufType::string ? pre_v->text : "";
  const PreTokenizer* pre = nullptr;
  for (const PreTokenizer& p : kPreTokenizers)
    if (pre_name == p.name) pre = &p;
  if (!pre)
    throw ConfigError(fmt::format("{}: metadata 'tokenizer.ggml.pre' is {} (mstar reads llama-bpe and qwen2)", file,
                                  pre_v ? pre_v->describe() : "missing"));
  const GgufValue& tokens = array_of(f, "tokenizer.ggml.tokens", GgufType::string);
  const GgufValue& merges = array_of(f, "tokenizer.ggml.merges", GgufType::string);
  const GgufValue* types = f.find("tokenizer.ggml.token_type");
  if (types && (types->type != GgufType::array || types->count() != tokens.count() || !types->reals.empty() ||
                !types->texts.empty()))
    throw ConfigError(
        fmt::format("{}: metadata 'tokenizer.ggml.token_type' is {} (an integer type for each of the {} "
                    "tokens)",
                    file, types->describe(), tokens.count()));
  json vocab = json::object(), added = json::array();
  for (std::size_t id = 0; id < tokens.texts.size(); ++id) {
    const int64_t type = types ? types->integers[id] : kNormal;
    const std::string& text = tokens.texts[id];
    switch (type) {
      case kNormal:
      case kUnknown:
      case kByte:
        vocab[text] = id;
        break;
      case kControl:
      case kUserDefined:
        added.push_back({{"id", id},
                         {"content", text},
                         {"single_word", false},
                         {"lstrip", false},
                         {"rstrip", false},
                         // GGUF keeps no per-token flag: a user-defined token is
                         // matched after the normalizer (NFC leaves Qwen2's own,
                         // which are ASCII, as they are).
                         {"normalized", type == kUserDefined},
                         {"special", type == kControl}});
        break;
      case kUnused:
        break;  // padding up to the embedding's rows: no token
      default:
        throw ConfigError(fmt::format("{}: metadata 'tokenizer.ggml.token_type'[{}] is {} (GGUF's types are 1 to 6)",
                                      file, id, type));
    }
  }
  GgufVocab out;
  json& t = out.tokenizer;
  t["version"] = "1.0";
  t["added_tokens"] = std::move(added);
  t["normalizer"] = pre->nfc ? json{{"type", "NFC"}} : json();
  t["pre_tokenizer"] = {
      {"type", "Sequence"},
      {"pretokenizers",
       {{{"type", "Split"}, {"pattern", {{"Regex", pre->pattern}}}, {"behavior", "Isolated"}, {"invert", false}},
        {{"type", "ByteLevel"}, {"add_prefix_space", false}, {"trim_offsets", false}, {"use_regex", false}}}}};
  t["decoder"] = {{"type", "ByteLevel"}, {"add_prefix_space", false}, {"trim_offsets", false}, {"use_regex", false}};
  t["model"] = {{"type", "BPE"},
                {"dropout", nullptr},
                {"unk_token", nullptr},
                {"fuse_unk", false},
                {"byte_fallback", false},
                {"ignore_merges", pre->ignore_merges},
                {"vocab", std::move(vocab)},
                {"merges", merges.texts}};
  // BOS and EOS by id, as tokenizer_config.json names them by text.
  const auto token_at = [&](const char* key) -> json {
    const GgufValue* v = f.find(key);
    if (!v) return json();
    if (!v->is_integer() || v->integer < 0 || static_cast<std::size_t>(v->integer) >= tokens.texts.size())
      throw ConfigError(
          fmt::format("{}: metadata '{}' is {} (a token id below {})", file, key, v->describe(), tokens.texts.size()));
    return tokens.texts[static_cast<std::size_t>(v->integer)];
  };
  const json bos = token_at("tokenizer.ggml.bos_token_id");
  out.config = {{"bos_token", bos}, {"eos_token", token_at("tokenizer.ggml.eos_token_id")}};
  const GgufValue* add_bos = f.find("tokenizer.ggml.add_bos_token");
  if (add_bos && add_bos->type == GgufType::boolean && add_bos->integer && bos.is_string()) {
    const std::string b = bos.get<std::string>();
    const auto id = static_cast<int64_t>(f.find("tokenizer.ggml.bos_token_id")->integer);
    t["post_processor"] = {
        {"type", "TemplateProcessing"},
        {"single", {{{"SpecialToken", {{"id", b}, {"type_id", 0}}}}, {{"Sequence", {{"id", "A"}, {"type_id", 0}}}}}},
        {"pair",
         {{{"SpecialToken", {{"id", b}, {"type_id", 0}}}},
          {{"Sequence", {{"id", "A"}, {"type_id", 0}}}},
          {{"SpecialToken", {{"id", b}, {"type_id", 1}}}},
          {{"Sequence", {{"id", "B"}, {"type_id", 1}}}}}},
        {"special_tokens", {{b, {{"id", b}, {"ids", {id}}, {"tokens", {b}}}}}}};
  } else {
    t["post_processor"] = json();
  }
  return out;
}

std::vector<std::pair<std::string, GgufValue>> gguf_tokenizer_metadata(const nlohmann::json& j,
                                                                       const std::string& label, const std::string& pre,
                                                                       int64_t vocab, std::optional<int32_t> bos,
                                                                       std::optional<int32_t> eos, bool add_bos) {
  if (std::none_of(std::begin(kPreTokenizers), std::end(kPreTokenizers),
                   [&](const PreTokenizer& p) { return pre == p.name; }))
    throw ConfigError(fmt::format("{}: no GGUF pre-tokenizer '{}' (mstar writes llama-bpe and qwen2)", label, pre));
  const json* model = j.contains("model") ? &j["model"] : nullptr;
  if (!model || !model->is_object() || model->value("type", "") != "BPE" || !(*model)["vocab"].is_object() ||
      !(*model)["merges"].is_array())
    throw ConfigError(
        fmt::format("{}: model: a byte-level BPE model with vocab and merges is what GGUF's gpt2 "
                    "tokenizer holds",
                    label));
  std::vector<std::string> tokens(static_cast<std::size_t>(vocab));
  std::vector<int64_t> types(static_cast<std::size_t>(vocab), kUnused);
  const auto place = [&](int64_t id, const std::string& text, int64_t type) {
    if (id < 0 || id >= vocab)
      throw ConfigError(
          fmt::format("{}: token '{}' has id {}, past the model's vocabulary of {}", label, text, id, vocab));
    if (types[static_cast<std::size_t>(id)] != kUnused && tokens[static_cast<std::size_t>(id)] != text)
      throw ConfigError(
          fmt::format("{}: id {} is both '{}' and '{}'", label, id, tokens[static_cast<std::size_t>(id)], text));
    tokens[static_cast<std::size_t>(id)] = text;
    types[static_cast<std::size_t>(id)] = type;
  };
  for (const auto& [text, id] : (*model)["vocab"].items()) place(id.get<int64_t>(), text, kNormal);
  if (j.contains("added_tokens") && j["added_tokens"].is_array())
    for (const json& a : j["added_tokens"])
      place(a.at("id").get<int64_t>(), a.at("content").get<std::string>(),
            a.value("special", false) ? kControl : kUserDefined);
  for (std::size_t id = 0; id < tokens.size(); ++id)
    if (types[id] == kUnused) tokens[id] = fmt::format("[PAD{}]", id);
  std::vector<std::string> merges;
  for (const json& m : (*model)["merges"])
    merges.push_back(m.is_string() ? m.get<std::string>()
                                   : fmt::format("{} {}", m.at(0).get<std::string>(), m.at(1).get<std::string>()));
  std::vector<std::pair<std::string, GgufValue>> out = {
      {"tokenizer.ggml.model", gguf_string("gpt2")},
      {"tokenizer.ggml.pre", gguf_string(pre)},
      {"tokenizer.ggml.tokens", gguf_strings(std::move(tokens))},
      {"tokenizer.ggml.token_type", gguf_i32s(std::move(types))},
      {"tokenizer.ggml.merges", gguf_strings(std::move(merges))},
      {"tokenizer.ggml.add_bos_token", gguf_bool(add_bos)},
  };
  if (bos) out.emplace_back("tokenizer.ggml.bos_token_id", gguf_u32(static_cast<uint32_t>(*bos)));
  if (eos) out.emplace_back("tokenizer.ggml.eos_token_id", gguf_u32(static_cast<uint32_t>(*eos)));
  return out;
}

}  // namespace mstar::tok
