#include "tokenizer/tokenizer.h"

#include <fstream>
#include <sstream>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "core/errors.h"
#include "core/gguf.h"
#include "core/files.h"
#include "core/json_text.h"
#include "tokenizer/gguf_vocab.h"
#include "tokenizer/impl.h"
#include "core/utf8.h"

namespace mstar {
namespace tok {

void TokenizerImpl::check_id(int32_t id) const {
  if (!valid_id(id))
    throw InputError(fmt::format("token id {} is not in the vocabulary of {} (ids 0..{})", id, label,
                                 static_cast<int64_t>(kind.size()) - 1));
}

void TokenizerImpl::encode(std::string_view text, bool add_special_tokens, std::vector<int32_t>& out) const {
  if (const size_t bad = find_invalid_utf8(text); bad != kValidUtf8)
    throw InputError(fmt::format("text is not valid UTF-8: byte 0x{:02X} at offset {}",
                                 static_cast<unsigned char>(text[bad]), bad));
  out.clear();
  out.reserve(text.size() / 3 + 4);
  std::string normalized;
  auto words = [&](std::string_view piece) { pre_tokenizer.run(piece, [&](std::string_view w) { model->tokenize(w, out); }); };
  // As the reference: added tokens with normalized: false are cut from the
  // raw text; each piece between them is normalized on its own, then the
  // normalized added tokens are cut from it.
  raw_matcher.split(text, [&](std::string_view piece, int32_t id) {
    if (id >= 0) {
      out.push_back(id);
      return;
    }
    const std::string_view norm = normalizer.apply(piece, normalized);
    if (normal_matcher.empty()) {
      words(norm);
      return;
    }
    normal_matcher.split(norm, [&](std::string_view p, int32_t nid) {
      if (nid >= 0) {
        out.push_back(nid);
      } else {
        words(p);
      }
    });
  });
  post.apply(out, add_special_tokens);
}

}  // namespace tok

namespace {

// tokenizer.json files run to tens of megabytes (a 150k vocabulary with its
// merges); nothing larger is one.
constexpr std::size_t kMaxTokenizerBytes = std::size_t{512} << 20;

nlohmann::json read_json(const std::filesystem::path& p) {
  // A file that cannot be read or parsed is a configuration problem here:
  // the tokenizer is named by a manifest or on the command line.
  try {
    return parse_json(read_regular_file(p, kMaxTokenizerBytes, p.string()), p.string());
  } catch (const InputError& e) {
    throw ConfigError(e.what());
  }
}

}  // namespace

Tokenizer Tokenizer::from_file(const std::filesystem::path& path) {
  std::error_code ec;
  if (std::filesystem::is_regular_file(path, ec) && is_gguf(path)) {
    const tok::GgufVocab v = tok::gguf_vocab(read_gguf(path));
    return from_json(v.tokenizer, path.string(), &v.config, path.string());
  }
  if (std::filesystem::is_directory(path, ec)) {
    const auto file = path / "tokenizer.json";
    const auto config_file = path / "tokenizer_config.json";
    const nlohmann::json j = read_json(file);
    if (std::filesystem::exists(config_file, ec)) {
      const nlohmann::json c = read_json(config_file);
      return from_json(j, file.string(), &c, config_file.string());
    }
    return from_json(j, file.string());
  }
  return from_json(read_json(path), path.string());
}

Tokenizer Tokenizer::from_json(const nlohmann::json& tokenizer_json, const std::string& label,
                               const nlohmann::json* tokenizer_config, const std::string& config_label) {
  return Tokenizer(tok::load_tokenizer(tokenizer_json, label, tokenizer_config, config_label));
}

std::vector<int32_t> Tokenizer::encode(std::string_view text, bool add_special_tokens) const {
  std::vector<int32_t> ids;
  impl_->encode(text, add_special_tokens, ids);
  return ids;
}

std::string Tokenizer::decode(std::span<const int32_t> ids, bool skip_special_tokens) const {
  std::string run, bytes;
  for (int32_t id : ids) {
    impl_->check_id(id);
    if (skip_special_tokens && impl_->special[id]) continue;
    impl_->decoder.feed(id, run, bytes);
  }
  impl_->decoder.end_run(run, bytes);
  std::string out;
  out.reserve(bytes.size());
  append_lossy_utf8(bytes, true, out);
  return out;
}

size_t Tokenizer::vocab_size() const { return impl_->vocab_size; }

std::optional<int32_t> Tokenizer::token_to_id(std::string_view token) const {
  if (int32_t id = impl_->added_by_content.find(token); id >= 0) return id;
  if (int32_t id = impl_->model->find(token); id >= 0) return id;
  return std::nullopt;
}

std::optional<std::string> Tokenizer::id_to_token(int32_t id) const {
  if (!impl_->valid_id(id)) return std::nullopt;
  if (impl_->added_index[id] >= 0) return impl_->added[impl_->added_index[id]].content;
  return *impl_->model->token(id);
}

const std::vector<SpecialToken>& Tokenizer::special_tokens() const { return impl_->specials; }
bool Tokenizer::is_special(int32_t id) const { return impl_->valid_id(id) && impl_->special[id]; }
std::optional<int32_t> Tokenizer::bos_id() const { return impl_->bos; }
std::optional<int32_t> Tokenizer::eos_id() const { return impl_->eos; }
bool Tokenizer::adds_bos() const { return impl_->adds_bos; }

TokenStreamDecoder::TokenStreamDecoder(const Tokenizer& tokenizer, bool skip_special_tokens)
    : impl_(tokenizer.impl_), skip_special_(skip_special_tokens) {}

std::string TokenStreamDecoder::push(std::span<const int32_t> ids) {
  for (int32_t id : ids) {
    if (!impl_->valid_id(id)) continue;  // a model's id the tokenizer cannot spell: nothing
    if (skip_special_ && impl_->special[id]) continue;
    impl_->decoder.feed(id, run_, pending_);
  }
  std::string out;
  const size_t used = append_lossy_utf8(pending_, false, out);
  pending_.erase(0, used);
  return out;
}

std::string TokenStreamDecoder::finish() {
  impl_->decoder.end_run(run_, pending_);
  std::string out;
  append_lossy_utf8(pending_, true, out);
  pending_.clear();
  return out;
}

}  // namespace mstar
