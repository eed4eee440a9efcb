// The tokenizer: goldens computed by an independent implementation (the
// JavaScript @huggingface/tokenizers, tools/tokenizer/make_goldens.mjs) on two
// cut-down real vocabularies, every refusal, the places where the reference
// engine's semantics were carried over by hand (Oniguruma's \s and case
// folding, the split behaviours, byte fallback and unknown tokens), streaming
// decode and UTF-8 handling.
#include <doctest/doctest.h>

#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <random>
#include <thread>

#include <nlohmann/json.hpp>

#include "core/errors.h"
#include "tokenizer/bpe.h"
#include "tokenizer/byte_level.h"
#include "tokenizer/decoder.h"
#include "tokenizer/json_at.h"
#include "tokenizer/normalizer.h"
#include "tokenizer/pre_tokenizer.h"
#include "tokenizer/regex.h"
#include "tokenizer/tokenizer.h"
#include "core/utf8.h"

using namespace mstar;
using nlohmann::json;

namespace {

const std::string kData = std::string(MSTAR_TEST_DATA) + "/tokenizer";

json load(const std::string& path) {
  std::ifstream in(path);
  REQUIRE_MESSAGE(in.good(), "missing test data " << path);
  return json::parse(in);
}

std::string shown(std::string_view s) { return json(std::string(s)).dump(); }

const Tokenizer& fixture(const std::string& name) {
  static std::map<std::string, Tokenizer> cache;
  auto it = cache.find(name);
  if (it == cache.end()) it = cache.emplace(name, Tokenizer::from_file(kData + "/" + name)).first;
  return it->second;
}

std::vector<int32_t> ids_of(const json& j) { return j.get<std::vector<int32_t>>(); }

void check_goldens(const std::string& name) {
  const Tokenizer& tok = fixture(name);
  const json g = load(kData + "/goldens/" + name + ".json");
  REQUIRE(g["cases"].size() > 300);
  size_t failures = 0;
  for (const json& c : g["cases"]) {
    const std::string text = c["text"];
    CAPTURE(shown(text));
    const auto ids = tok.encode(text);
    const auto plain = tok.encode(text, false);
    const bool ok = ids == ids_of(c["ids"]) && plain == ids_of(c["ids_no_special"]) &&
                    tok.decode(ids) == c["decoded"] && tok.decode(ids, true) == c["decoded_skip_special"];
    CHECK(ids == ids_of(c["ids"]));
    CHECK(plain == ids_of(c["ids_no_special"]));
    CHECK(tok.decode(ids) == c["decoded"].get<std::string>());
    CHECK(tok.decode(ids, true) == c["decoded_skip_special"].get<std::string>());
    // Streaming, one id at a time, gives the same text as decoding at once.
    TokenStreamDecoder stream(tok);
    std::string streamed;
    for (int32_t id : ids) streamed += stream.push(id);
    streamed += stream.finish();
    CHECK(streamed == c["decoded"].get<std::string>());
    failures += !ok;
  }
  CHECK(failures == 0);
}

void check_decode_goldens(const std::string& name) {
  const Tokenizer& tok = fixture(name);
  const json g = load(kData + "/goldens/" + name + ".json");
  REQUIRE(g["decode_cases"].size() > 50);
  bool saw_replacement = false;
  for (const json& c : g["decode_cases"]) {
    const auto ids = ids_of(c["ids"]);
    CAPTURE(c["ids"].dump());
    const std::string want = c["decoded"];
    CHECK(tok.decode(ids) == want);
    CHECK(tok.decode(ids, true) == c["decoded_skip_special"].get<std::string>());
    saw_replacement = saw_replacement || want.find("\xEF\xBF\xBD") != std::string::npos;
  }
  // The sequences are drawn to cut characters apart; the file is only a test
  // of the replacement policy if some did.
  CHECK(saw_replacement);
}

std::string what_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const ConfigError& e) {
    return e.what();
  } catch (const InputError& e) {
    return std::string("InputError: ") + e.what();
  }
  return "(no exception)";
}

// Loads a modified copy of llama3-mini's tokenizer.json and expects a
// ConfigError whose message holds every one of `parts`.
void expect_refused(const std::function<void(json&)>& edit, std::initializer_list<std::string> parts) {
  static const json base = load(kData + "/llama3-mini/tokenizer.json");
  json j = base;
  edit(j);
  const std::string msg = what_of([&] { Tokenizer::from_json(j, "edited.json"); });
  CAPTURE(msg);
  CHECK(msg.starts_with("edited.json: "));
  for (const auto& p : parts) CHECK(msg.find(p) != std::string::npos);
}

tok::PreTokenizer pre_tokenizer(const json& j) {
  static const std::string file = "test.json";
  return tok::PreTokenizer::from_json(tok::JsonAt(j, "pre_tokenizer", file));
}

std::vector<std::string> pieces(const tok::PreTokenizer& p, std::string_view text) {
  std::vector<std::string> out;
  p.run(text, [&](std::string_view s) { out.emplace_back(s); });
  return out;
}

json split_then_bytes(json split) {
  return json{{"type", "Sequence"},
              {"pretokenizers",
               {split, {{"type", "ByteLevel"}, {"add_prefix_space", false}, {"trim_offsets", false}, {"use_regex", false}}}}};
}

std::vector<tok::Span> matches(const std::string& pattern, std::string_view text) {
  static const std::string file = "test.json";
  const json j = pattern;
  const auto re = tok::Regex::oniguruma(pattern, tok::JsonAt(j, "pattern", file));
  std::vector<tok::Span> out;
  re.find_all(text, out);
  return out;
}

// A byte-level tokenizer over all 256 byte characters except the one for
// 'b', with the given model options merged in.
json tiny_tokenizer(const json& model_options, const json& extra_vocab) {
  json vocab = json::object();
  int32_t id = 0;
  for (int b = 0; b < 256; ++b) {
    if (b == 'b') continue;
    vocab[tok::byte_level_encode(std::string(1, static_cast<char>(b)))] = id++;
  }
  for (const auto& t : extra_vocab) vocab[t.get<std::string>()] = id++;
  json model = {{"type", "BPE"}, {"vocab", vocab}, {"merges", json::array()}};
  model.update(model_options);
  return {{"version", "1.0"},
          {"added_tokens", json::array()},
          {"normalizer", nullptr},
          // No regex split: the whole text is one word, so the order of
          // fallback and unknown tokens within a word is visible.
          {"pre_tokenizer", {{"type", "ByteLevel"}, {"add_prefix_space", false}, {"trim_offsets", true}, {"use_regex", false}}},
          {"post_processor", nullptr},
          {"decoder", {{"type", "ByteLevel"}}},
          {"model", model}};
}

}  // namespace

TEST_CASE("tokenizer: llama3-mini matches the JavaScript reference on the hard-string corpus") {
  check_goldens("llama3-mini");
}

TEST_CASE("tokenizer: qwen2-mini matches the JavaScript reference on the hard-string corpus") {
  check_goldens("qwen2-mini");
}

TEST_CASE("tokenizer: decoding arbitrary id sequences matches the reference's U+FFFD policy") {
  check_decode_goldens("llama3-mini");
  check_decode_goldens("qwen2-mini");
}

TEST_CASE("tokenizer: vocabulary, special tokens, BOS and EOS") {
  const Tokenizer& llama = fixture("llama3-mini");
  CHECK(llama.vocab_size() == 4000 + 71);
  CHECK(llama.bos_id() == 4000);  // tokenizer_config.json's <|begin_of_text|>
  CHECK(llama.eos_id() == 4001);  // <|end_of_text|>
  CHECK(llama.adds_bos());
  CHECK(llama.special_tokens().size() == 71);
  CHECK(llama.token_to_id("<|s_0|>") == 4007);
  CHECK(llama.token_to_id("<|s_63|>") == 4070);
  CHECK(llama.id_to_token(4070) == "<|s_63|>");
  CHECK(llama.is_special(4070));
  CHECK(!llama.is_special(220));
  CHECK(llama.token_to_id("Ġthe") == llama.encode(" the", false).at(0));
  CHECK(llama.id_to_token(220) == "Ġ");
  CHECK(!llama.id_to_token(5000));
  CHECK(!llama.token_to_id("no such token"));

  const Tokenizer& qwen = fixture("qwen2-mini");
  CHECK(qwen.vocab_size() == 6000 + 27);
  CHECK(!qwen.bos_id());
  CHECK(qwen.eos_id() == qwen.token_to_id("<|im_end|>"));
  CHECK(!qwen.adds_bos());
  CHECK(qwen.encode("hi") == qwen.encode("hi", false));
  // Qwen's <think> is added but not special: decoding keeps it when skipping.
  const auto think = qwen.encode("<think>");
  REQUIRE(think.size() == 1);
  CHECK(!qwen.is_special(think[0]));
  CHECK(qwen.decode(think, true) == "<think>");

  // Without tokenizer_config.json, BOS and EOS come from the template.
  const Tokenizer bare = Tokenizer::from_file(kData + "/llama3-mini/tokenizer.json");
  CHECK(bare.bos_id() == 4000);
  CHECK(!bare.eos_id());
  CHECK(bare.adds_bos());
}

TEST_CASE("tokenizer: streaming decode never splits a character") {
  const Tokenizer& tok = fixture("llama3-mini");
  const std::string text = "Family 👨‍👩‍👧‍👦, thumbs 👍🏽👍🏿, flags 🇫🇷🇯🇵, 你好, e\u0301 and 🙂🙂🙂 done";
  const auto ids = tok.encode(text, false);
  TokenStreamDecoder stream(tok);
  std::string joined;
  size_t held = 0;
  for (int32_t id : ids) {
    const std::string piece = stream.push(id);
    CAPTURE(shown(piece));
    CHECK(find_invalid_utf8(piece) == kValidUtf8);
    CHECK(piece.find("\xEF\xBF\xBD") == std::string::npos);
    held += piece.empty();
    joined += piece;
  }
  joined += stream.finish();
  CHECK(joined == text);
  // The small vocabulary spells emoji with several byte tokens, so some ids
  // must have completed no character; otherwise nothing was held back.
  CHECK(held > 0);

  // Chunks of three ids, and skipping special tokens, give decode's text too.
  std::vector<int32_t> with_specials = tok.encode("<|s_5|>" + text + "<|s_9|>");
  TokenStreamDecoder skipping(tok, true);
  std::string chunked;
  for (size_t i = 0; i < with_specials.size(); i += 3)
    chunked += skipping.push(std::span(with_specials).subspan(i, std::min<size_t>(3, with_specials.size() - i)));
  chunked += skipping.finish();
  CHECK(chunked == tok.decode(with_specials, true));
  CHECK(chunked == text);
}

TEST_CASE("tokenizer: a stream ending inside a character flushes U+FFFD") {
  const Tokenizer& tok = fixture("llama3-mini");
  const auto first_byte = tok.token_to_id(tok::byte_level_encode("\xF0"));
  REQUIRE(first_byte);
  TokenStreamDecoder stream(tok);
  CHECK(stream.push(*tok.token_to_id("a")) == "a");
  CHECK(stream.push(*first_byte).empty());
  CHECK(stream.finish() == "\xEF\xBF\xBD");
  // After finish the decoder starts afresh.
  CHECK(stream.push(*tok.token_to_id("b")) == "b");
  CHECK(stream.finish().empty());
}

TEST_CASE("tokenizer: text that is not UTF-8 is refused with the byte offset") {
  const Tokenizer& tok = fixture("qwen2-mini");
  const std::pair<std::string, std::string> cases[] = {
      {"abc\xFF", "offset 3"},                 // a byte that never occurs in UTF-8
      {"ab\xE2\x82", "offset 2"},              // truncated sequence
      {"\xC0\xAF", "offset 0"},                // overlong
      {"x\xED\xA0\x80y", "offset 1"},          // a surrogate
      {"ok \xF4\x90\x80\x80", "offset 3"},     // above U+10FFFF
      {"caf\xC3\xA9 \x80", "offset 6"},        // a stray continuation byte
  };
  for (const auto& [text, where] : cases) {
    const std::string msg = what_of([&] { tok.encode(text); });
    CAPTURE(msg);
    CHECK(msg.starts_with("InputError: text is not valid UTF-8"));
    CHECK(msg.find(where) != std::string::npos);
  }
}

TEST_CASE("tokenizer: decode refuses ids outside the vocabulary, while a stream of a model's ids decodes them to nothing") {
  const Tokenizer& tok = fixture("llama3-mini");
  const std::vector<int32_t> bad{1, 4071};
  const std::string msg = what_of([&] { tok.decode(bad); });
  CHECK(msg.find("token id 4071 is not in the vocabulary") != std::string::npos);
  CHECK(what_of([&] { tok.decode(std::vector<int32_t>{-1}); }).find("token id -1") != std::string::npos);
  // A model's vocabulary may be larger than its tokenizer's: the ids beyond
  // it are drawn in a stream and spell nothing, and the stream goes on.
  TokenStreamDecoder stream(tok);
  const std::vector<int32_t> good = tok.encode("hello world", false);
  std::string text = stream.push(99999) + stream.push(-1);
  CHECK(text.empty());
  text += stream.push(good) + stream.push(std::vector<int32_t>{4071, 21121}) + stream.finish();
  CHECK(text == tok.decode(good));
}

TEST_CASE("tokenizer: everything outside the supported subset is refused, naming path and value") {
  expect_refused([](json& j) { j["model"]["type"] = "WordPiece"; }, {"model.type", "\"WordPiece\""});
  expect_refused([](json& j) { j["pre_tokenizer"] = {{"type", "Whitespace"}}; }, {"pre_tokenizer.type", "\"Whitespace\""});
  expect_refused([](json& j) { j["pre_tokenizer"]["pretokenizers"][0] = {{"type", "Digits"}, {"individual_digits", true}}; },
                 {"pre_tokenizer.pretokenizers[0].type", "\"Digits\""});
  expect_refused([](json& j) { j["normalizer"] = {{"type", "NFKC"}}; }, {"normalizer.type", "\"NFKC\""});
  expect_refused([](json& j) { j["normalizer"] = {{"type", "Sequence"}, {"normalizers", {{{"type", "NFC"}}, {{"type", "Lowercase"}}}}}; },
                 {"normalizer.normalizers[1].type", "\"Lowercase\""});
  expect_refused([](json& j) { j["truncation"] = {{"max_length", 8}}; }, {"truncation", "max_length"});
  expect_refused([](json& j) { j["padding"] = {{"length", 8}}; }, {"padding"});
  expect_refused([](json& j) { j["version"] = "2.0"; }, {"version", "\"2.0\""});
  expect_refused([](json& j) { j["model"]["dropout"] = 0.1; }, {"model.dropout", "0.1"});
  expect_refused([](json& j) { j["model"]["continuing_subword_prefix"] = "##"; }, {"model.continuing_subword_prefix", "\"##\""});
  expect_refused([](json& j) { j["model"]["end_of_word_suffix"] = "</w>"; }, {"model.end_of_word_suffix", "\"</w>\""});
  expect_refused([](json& j) { j["model"]["unk_token"] = "<unk>"; }, {"model.unk_token", "\"<unk>\""});
  expect_refused([](json& j) { j["model"]["frobnicate"] = true; }, {"model.frobnicate", "unknown key"});
  expect_refused([](json& j) { j["model"]["merges"][0] = "Ġ zzzq"; }, {"model.merges[0]", "\"zzzq\""});
  expect_refused([](json& j) { j["model"]["merges"][0] = "a b c"; }, {"model.merges[0]", "\"a b c\""});
  expect_refused([](json& j) { j["model"]["vocab"]["dup"] = 5; }, {"model.vocab.dup", "id 5"});
  // Found by fuzz_tokenizer: one id of 155 million sized the id tables to GiBs.
  expect_refused([](json& j) { j["model"]["vocab"]["far"] = 1 << 30; }, {"model.vocab.far", "id 1073741824 is out of range"});
  expect_refused([](json& j) { j["model"]["vocab"]["gap"] = 2 * (j["model"]["vocab"].size() + 1) + 1024; },
                 {"model.vocab.gap", "out of range", "takes ids below"});
  expect_refused([](json& j) { j["added_tokens"][0]["lstrip"] = true; }, {"added_tokens[0].lstrip", "true"});
  expect_refused([](json& j) { j["added_tokens"][2]["single_word"] = true; }, {"added_tokens[2].single_word"});
  expect_refused([](json& j) { j["added_tokens"][1]["id"] = 4100; }, {"added_tokens[1].id", "4100", "4001"});
  expect_refused([](json& j) { j["added_tokens"][1]["content"] = j["added_tokens"][0]["content"]; },
                 {"added_tokens[1].content", "added twice"});
  expect_refused([](json& j) { j["decoder"] = {{"type", "Metaspace"}}; }, {"decoder.type", "\"Metaspace\""});
  expect_refused([](json& j) { j["decoder"] = nullptr; }, {"decoder", "null"});
  expect_refused([](json& j) { j["decoder"] = {{"type", "Sequence"}, {"decoders", {{{"type", "ByteFallback"}}}}}; },
                 {"decoder.decoders[0].type", "\"ByteFallback\""});
  expect_refused([](json& j) { j["decoder"] = {{"type", "Sequence"}, {"decoders", {{{"type", "ByteLevel"}}, {{"type", "ByteFallback"}}}}}; },
                 {"decoder.decoders[0].type", "\"ByteLevel\""});
  expect_refused([](json& j) { j["post_processor"]["processors"][1]["type"] = "BertProcessing"; },
                 {"post_processor.processors[1].type", "\"BertProcessing\""});
  expect_refused([](json& j) { j["post_processor"]["processors"][1]["special_tokens"] = json::object(); },
                 {"post_processor.processors[1].single[0].SpecialToken.id", "<|begin_of_text|>"});
  expect_refused([](json& j) { j["pre_tokenizer"]["pretokenizers"][0]["pattern"]["Regex"] = "\\w+|\\s+"; },
                 {"pre_tokenizer.pretokenizers[0].pattern.Regex", "'\\w' at byte 0"});
  expect_refused([](json& j) { j["pre_tokenizer"]["pretokenizers"][0]["pattern"]["Regex"] = "\\p{N}{1,3}+|."; },
                 {"pre_tokenizer.pretokenizers[0].pattern.Regex", "'{1,3}+' at byte 5"});
  expect_refused([](json& j) { j["pre_tokenizer"]["pretokenizers"][0]["behavior"] = "Sideways"; },
                 {"pre_tokenizer.pretokenizers[0].behavior", "\"Sideways\""});
  expect_refused([](json& j) { j["pre_tokenizer"] = j["pre_tokenizer"]["pretokenizers"][0]; },
                 {"pre_tokenizer", "ByteLevel pre-tokenizer as its last step"});
  expect_refused(
      [](json& j) {
        auto& list = j["pre_tokenizer"]["pretokenizers"];
        std::swap(list[0], list[1]);
      },
      {"pre_tokenizer.pretokenizers[1].type", "after ByteLevel"});
  expect_refused([](json& j) { j["pre_tokenizer"] = nullptr; }, {"pre_tokenizer", "null"});
}

TEST_CASE("tokenizer: unreadable files are refused by path") {
  CHECK(what_of([] { Tokenizer::from_file(kData + "/no-such-dir"); }).find("no-such-dir: cannot be read") !=
        std::string::npos);
  const std::string tmp = (std::filesystem::temp_directory_path() / "mstar-tokenizer-test-bad.json").string();
  {
    std::ofstream(tmp) << "{\"model\": ";
  }
  CHECK(what_of([&] { Tokenizer::from_file(tmp); }).find("not valid JSON") != std::string::npos);
  std::filesystem::remove(tmp);
  json bad_config = {{"bos_token", "<|no_such|>"}};
  const json j = load(kData + "/llama3-mini/tokenizer.json");
  const std::string msg = what_of([&] { Tokenizer::from_json(j, "t.json", &bad_config, "cfg.json"); });
  CHECK(msg.find("cfg.json: bos_token") != std::string::npos);
  CHECK(msg.find("<|no_such|>") != std::string::npos);
}

TEST_CASE("tokenizer: patterns are carried from Oniguruma to PCRE2 or refused") {
  static const std::string file = "p.json";
  auto translate = [](const std::string& p) {
    const json j = p;
    return tok::oniguruma_to_pcre2(p, tok::JsonAt(j, "pattern", file));
  };
  CHECK(translate(R"([^\s\p{L}\p{N}]+|\s+(?!\S))") ==
        R"([^\p{White_Space}\p{L}\p{N}]+|\p{White_Space}+(?!\P{White_Space}))");
  CHECK(translate(R"(\p{N}{,3}\d\v\u00e9)") == R"(\p{N}{0,3}\p{Nd}\x{0B}\x{00e9})");
  CHECK(translate("(?i:'s|'t|'re|'ve|'m|'ll|'d)") == "(?i:'s|'t|'re|'ve|'m|'ll|'d)");
  CHECK(translate(R"(\p{^L}x{2})") == R"(\P{L}x{2})");
  for (const char* refused : {"a.b", "^a", "a$", R"(\w)", R"(\bx)", R"(\h)", R"(\p{Han})", "(?i:ss)", "(?i:[a-z])",
                              "(?i:é)", "[a[b]]", "[a&&b]", "(?<n>a)", "(?x)a", "a{2,3}+", R"(\1)", "(a"}) {
    CAPTURE(refused);
    CHECK(what_of([&] { translate(refused); }).find("p.json: pattern:") != std::string::npos);
  }
}

TEST_CASE("tokenizer: \\s is Oniguruma's White_Space, not PCRE2's wider \\s") {
  // U+180E was a space until Unicode 6.3; PCRE2's \h still lists it.
  // U+FEFF is no White_Space; U+0085 is.
  const std::string text = "a\u180Eb\u0085c\uFEFFd\u3000e";
  const auto m = matches(R"(\s+)", text);
  REQUIRE(m.size() == 2);
  CHECK(text.substr(m[0].begin, m[0].end - m[0].begin) == "\u0085");
  CHECK(text.substr(m[1].begin, m[1].end - m[1].begin) == "\u3000");
}

TEST_CASE("tokenizer: (?i:'s) matches 'ſ as Oniguruma's Unicode case folding does") {
  // Not in the goldens: the JavaScript reference folds ASCII letters only, so
  // it would cut "it'ſtrue" as "it" "'ſtrue" where the Rust library (and
  // mstar) take the contraction first.
  const json llama = load(kData + "/llama3-mini/tokenizer.json");
  const auto p = pre_tokenizer(llama["pre_tokenizer"]);
  CHECK(pieces(p, "it'\u017Ftrue") == std::vector<std::string>{"it", "'\u017F", "true"});
  CHECK(pieces(p, "IT'S") == std::vector<std::string>{"IT", "'S"});
}

TEST_CASE("tokenizer: split behaviours follow the reference's definitions") {
  // The examples of the reference's SplitDelimiterBehavior documentation.
  const std::pair<const char*, std::vector<std::string>> expected[] = {
      {"Removed", {"the", "final", "countdown"}},
      {"Isolated", {"the", "-", "final", "-", "-", "countdown"}},
      {"MergedWithPrevious", {"the-", "final-", "-", "countdown"}},
      {"MergedWithNext", {"the", "-final", "-", "-countdown"}},
      {"Contiguous", {"the", "-", "final", "--", "countdown"}},
  };
  for (const auto& [behavior, want] : expected) {
    CAPTURE(behavior);
    const auto p = pre_tokenizer(split_then_bytes({{"type", "Split"}, {"pattern", {{"String", "-"}}}, {"behavior", behavior}, {"invert", false}}));
    CHECK(pieces(p, "the-final--countdown") == want);
  }
  // Inverting the pattern flips what counts as the delimiter.
  const auto removed_spaces = pre_tokenizer(
      split_then_bytes({{"type", "Split"}, {"pattern", {{"String", " "}}}, {"behavior", "Removed"}, {"invert", false}}));
  const auto kept_hello = pre_tokenizer(
      split_then_bytes({{"type", "Split"}, {"pattern", {{"String", "Hello"}}}, {"behavior", "Removed"}, {"invert", true}}));
  CHECK(pieces(removed_spaces, "Hello Hello Hello") == pieces(kept_hello, "Hello Hello Hello"));
  CHECK(pieces(kept_hello, "Hello Hello Hello") == std::vector<std::string>{"Hello", "Hello", "Hello"});
  // Isolated keeps every segment, so inverting changes nothing.
  const auto isolated_inverted = pre_tokenizer(
      split_then_bytes({{"type", "Split"}, {"pattern", {{"Regex", "\\d+"}}}, {"behavior", "Isolated"}, {"invert", true}}));
  CHECK(pieces(isolated_inverted, "ab12cd345") == std::vector<std::string>{"ab", "12", "cd", "345"});
  // A pattern that matches empty strings splits between characters, as the
  // reference's iteration (an empty match right after a match is skipped).
  const auto empty_matches = pre_tokenizer(
      split_then_bytes({{"type", "Split"}, {"pattern", {{"Regex", "x*"}}}, {"behavior", "Isolated"}, {"invert", false}}));
  CHECK(pieces(empty_matches, "abxxc") == std::vector<std::string>{"a", "b", "xx", "c"});
}

TEST_CASE("tokenizer: ByteLevel's prefix space and GPT-2 pattern") {
  const auto p = pre_tokenizer({{"type", "ByteLevel"}, {"add_prefix_space", true}, {"trim_offsets", true}, {"use_regex", true}});
  CHECK(pieces(p, "Hello world") == std::vector<std::string>{" Hello", " world"});
  CHECK(pieces(p, " x's  12") == std::vector<std::string>{" x", "'s", " ", " 12"});
  // U+FEFF is no White_Space, so it joins the punctuation run (a JavaScript
  // \s would take it as a space and cut " x" " " "\uFEFF" "!").
  CHECK(pieces(p, "x \uFEFF!") == std::vector<std::string>{" x", " \uFEFF!"});
  const auto q = pre_tokenizer({{"type", "ByteLevel"}, {"add_prefix_space", false}, {"use_regex", false}});
  CHECK(pieces(q, "Hello world") == std::vector<std::string>{"Hello world"});
  // The prefix space goes on every piece a previous step produced.
  const auto r = pre_tokenizer({{"type", "Sequence"},
                                {"pretokenizers",
                                 {{{"type", "Split"}, {"pattern", {{"String", "|"}}}, {"behavior", "Removed"}, {"invert", false}},
                                  {{"type", "ByteLevel"}, {"add_prefix_space", true}, {"use_regex", false}}}}});
  CHECK(pieces(r, "a|b| c") == std::vector<std::string>{" a", " b", " c"});
}

TEST_CASE("tokenizer: byte fallback and unknown tokens follow the reference's merge_word") {
  const std::string unk = "<unk>", fb = "<0x62>";
  auto ids = [](const json& j, const std::string& text) { return Tokenizer::from_json(j, "tiny.json").encode(text); };
  auto id_of = [](const json& j, const std::string& t) { return j["model"]["vocab"][t].get<int32_t>(); };
  const json plain = tiny_tokenizer(json::object(), json::array());
  const int32_t a = id_of(plain, "a"), c = id_of(plain, "c");
  // No unk token, no fallback: the unknown character is dropped.
  CHECK(ids(plain, "abc") == std::vector<int32_t>{a, c});
  const json with_unk = tiny_tokenizer({{"unk_token", unk}}, {unk});
  CHECK(ids(with_unk, "abbc") == std::vector<int32_t>{a, id_of(with_unk, unk), id_of(with_unk, unk), c});
  const json fused = tiny_tokenizer({{"unk_token", unk}, {"fuse_unk", true}}, {unk});
  CHECK(ids(fused, "abbc") == std::vector<int32_t>{a, id_of(fused, unk), c});
  const json fallback = tiny_tokenizer({{"byte_fallback", true}}, {fb});
  CHECK(ids(fallback, "abc") == std::vector<int32_t>{a, id_of(fallback, fb), c});
  // The fallback spells the byte-level character's UTF-8, not the raw byte:
  // a missing 'Ġ' (the space) would need <0xC4><0xA0>.
  const json no_space = [&] {
    json j = tiny_tokenizer({{"byte_fallback", true}, {"unk_token", unk}}, {unk, "<0xC4>", "<0xA0>"});
    j["model"]["vocab"].erase("\u0120");
    return j;
  }();
  CHECK(ids(no_space, "a c") == std::vector<int32_t>{a, id_of(no_space, "<0xC4>"), id_of(no_space, "<0xA0>"), c});
  // An unknown token waits for the next known character, so fallback tokens
  // that come between are emitted before it.
  CHECK(ids(no_space, "ab c") ==
        std::vector<int32_t>{a, id_of(no_space, "<0xC4>"), id_of(no_space, "<0xA0>"), id_of(no_space, unk), c});
}

TEST_CASE("tokenizer: the merge scan and the merge queue agree") {
  for (const char* name : {"llama3-mini", "qwen2-mini"}) {
    const json j = load(kData + "/" + name + "/tokenizer.json");
    static const std::string file = "m.json";
    const auto model = tok::BpeModel::from_json(tok::JsonAt(j["model"], "model", file));
    const Tokenizer& tok = fixture(name);
    std::mt19937 rng(7);
    const std::string alphabet = "etaoin shrdlu THE ing'!\n12\xC3\xA9\xE4\xBD\xA0";
    size_t merged = 0;
    for (int n = 0; n < 400; ++n) {
      std::string word;
      const size_t len = 1 + rng() % 90;
      for (size_t k = 0; k < len; ++k) word += alphabet[rng() % alphabet.size()];
      std::vector<int32_t> sym;
      for (char ch : word) sym.push_back(*tok.token_to_id(tok::byte_level_encode(std::string(1, ch))));
      auto a = sym, b = sym;
      model->merge_scan(a);
      model->merge_queue(b);
      CAPTURE(shown(word));
      CHECK(a == b);
      merged += a.size() < sym.size();
    }
    CHECK(merged > 300);
  }
}

TEST_CASE("tokenizer: NFC leaves text below U+0300 as it is and composes above") {
  for (char32_t cp = 1; cp < 0x300; ++cp) {
    std::string s;
    append_utf8(s, cp);
    s += "a";
    append_utf8(s, cp);
    CHECK(tok::nfc(s) == s);
  }
  CHECK(tok::nfc("e\u0301") == "\u00e9");
  CHECK(tok::nfc("\u212b") == "\u00c5");
  CHECK(tok::nfc("\u1100\u1161\u11a8") == "\uac01");
  CHECK(tok::nfc("q\u0307\u0323") == "q\u0323\u0307");
}

TEST_CASE("tokenizer: lossy UTF-8 replaces each maximal ill-formed part with one U+FFFD") {
  auto lossy = [](std::string_view s) {
    std::string out;
    CHECK(append_lossy_utf8(s, true, out) == s.size());
    return out;
  };
  const std::string r = "\xEF\xBF\xBD";
  // The example of the Unicode Standard, section 3.9 (U+FFFD substitution of
  // maximal subparts).
  CHECK(lossy("\x61\xF1\x80\x80\xE1\x80\xC2\x62\x80\x63\x80\xBF\x64") == "a" + r + r + r + "b" + r + "c" + r + r + "d");
  CHECK(lossy("\xC0\xAF") == r + r);
  CHECK(lossy("\xED\xA0\x80") == r + r + r);
  CHECK(lossy("\xF0\x9F\x98") == r);
  CHECK(lossy("ok") == "ok");
  std::string out;
  CHECK(append_lossy_utf8("a\xF0\x9F\x98", false, out) == 1);
  CHECK(out == "a");
}

TEST_CASE("tokenizer: concurrent encoders share one tokenizer") {
  const Tokenizer& tok = fixture("qwen2-mini");
  const json corpus = load(kData + "/corpus.json");
  std::vector<std::vector<int32_t>> want;
  for (const auto& s : corpus) want.push_back(tok.encode(s.get<std::string>()));
  std::vector<int> bad(4, 0);
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&, t] {
      for (int rep = 0; rep < 3; ++rep)
        for (size_t i = 0; i < corpus.size(); ++i) bad[t] += tok.encode(corpus[(i + t * 37) % corpus.size()].get<std::string>()) != want[(i + t * 37) % corpus.size()];
    });
  }
  for (auto& th : threads) th.join();
  CHECK(bad == std::vector<int>(4, 0));
}

TEST_CASE("tokenizer: <0xNN> tokens decode through ByteFallback as the reference's decoder chain does") {
  const std::string unk = "<unk>";
  json j = tiny_tokenizer({{"byte_fallback", true}, {"unk_token", unk}}, {unk, "<0xC4>", "<0xA0>", "<0xE4>", "<0xBD>", "<0xC3>", "<0xA9>"});
  j["model"]["vocab"].erase("\u0120");
  const Tokenizer plain = Tokenizer::from_json(j, "tiny.json");
  j["decoder"] = {{"type", "Sequence"}, {"decoders", {{{"type", "ByteFallback"}}, {{"type", "ByteLevel"}}}}};
  const Tokenizer chain = Tokenizer::from_json(j, "tiny.json");
  auto id = [&](const std::string& t) { return *chain.token_to_id(t); };

  // A missing 'Ġ' fell back to the UTF-8 of that character; the chain turns
  // the run back into 'Ġ' and ByteLevel into the space it stands for.
  const auto ids = chain.encode("a c");
  CHECK(ids == std::vector<int32_t>{id("a"), id("<0xC4>"), id("<0xA0>"), id("c")});
  CHECK(chain.decode(ids) == "a c");
  // Without ByteFallback in the decoder, the tokens are their six characters.
  CHECK(plain.decode(ids) == "a<0xC4><0xA0>c");
  // A run that is not UTF-8 gives one U+FFFD per byte (not per ill-formed
  // part: E4 BD is one truncated character).
  const std::string r = "\xEF\xBF\xBD";
  CHECK(chain.decode(std::vector<int32_t>{id("<0xE4>"), id("<0xBD>"), id("c")}) == r + r + "c");
  // A valid run is a token for ByteLevel: "é" is U+00E9, which stands for
  // the byte 0xE9, itself no UTF-8.
  CHECK(chain.decode(std::vector<int32_t>{id("a"), id("<0xC3>"), id("<0xA9>")}) == "a" + r);

  // Streaming holds a run until a token ends it.
  TokenStreamDecoder stream(chain);
  CHECK(stream.push(id("a")) == "a");
  CHECK(stream.push(id("<0xC4>")).empty());
  CHECK(stream.push(id("<0xA0>")).empty());
  CHECK(stream.push(id("c")) == " c");
  CHECK(stream.push(id("<0xE4>")).empty());
  CHECK(stream.finish() == r);

  CHECK(tok::fallback_byte("<0x0A>") == 10);
  CHECK(tok::fallback_byte("<0x0a>") == 10);
  CHECK(tok::fallback_byte("<0x+A>") == 10);  // Rust's from_str_radix takes a '+'
  CHECK(tok::fallback_byte("<0xZZ>") == -1);
  CHECK(tok::fallback_byte("<0x0A") == -1);
  CHECK(tok::fallback_byte("<0x0AA>") == -1);
}
