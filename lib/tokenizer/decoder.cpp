#include "tokenizer/decoder.h"

#include <algorithm>

#include <fmt/format.h>

#include "tokenizer/byte_level.h"
#include "core/utf8.h"

namespace mstar::tok {
namespace {

int hex(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

// The bytes ByteLevel gives for one token of the decoder chain.
void byte_level_token(std::string_view token, std::string& out) {
  if (auto b = byte_level_decode(token)) {
    out += *b;
  } else {
    out.append(token);
  }
}

}  // namespace

int fallback_byte(std::string_view t) {
  if (t.size() != 6 || !t.starts_with("<0x") || t.back() != '>') return -1;
  // from_str_radix takes an optional '+' before the digits.
  if (t[3] == '+') return hex(t[4]);
  const int hi = hex(t[3]), lo = hex(t[4]);
  return hi < 0 || lo < 0 ? -1 : hi * 16 + lo;
}

Decoder Decoder::from_json(const JsonAt& j) {
  Decoder d;
  j.expect_object();
  std::vector<JsonAt> steps;
  if (j.at("type").str() == "Sequence") {
    j.only_keys({"type", "decoders"});
    const JsonAt list = j.at("decoders");
    for (size_t i = 0; i < list.size(); ++i) steps.push_back(list[i]);
  } else {
    steps.push_back(j);
  }
  const char* kHint = "supported decoders: ByteLevel, a Sequence of [ByteLevel] or [ByteFallback, ByteLevel]";
  if (steps.size() == 2) {
    steps[0].expect_object();
    const JsonAt t = steps[0].at("type");
    if (t.str() != "ByteFallback") t.unsupported(kHint);
    steps[0].only_keys({"type"});
    d.byte_fallback_ = true;
  } else if (steps.size() != 1) {
    j.at("decoders").fail(fmt::format("a Sequence of {} decoders is not supported ({})", steps.size(), kHint));
  }
  const JsonAt& last = steps.back();
  last.expect_object();
  const JsonAt t = last.at("type");
  if (t.str() != "ByteLevel") t.unsupported(kHint);
  // These change offsets or encoding only; ByteLevel decoding ignores them.
  last.only_keys({"type", "add_prefix_space", "trim_offsets", "use_regex"});
  return d;
}

void Decoder::set_model(int32_t id, std::string_view token) {
  std::string b;
  byte_level_token(token, b);
  pending_.emplace_back(id, std::move(b));
  if (static_cast<size_t>(id) >= fallback_byte_.size()) fallback_byte_.resize(static_cast<size_t>(id) + 1, -1);
  fallback_byte_[id] = static_cast<int16_t>(fallback_byte(token));
}

void Decoder::set_added(int32_t id, std::string_view content) {
  pending_.emplace_back(id, std::string(content));
  if (static_cast<size_t>(id) >= fallback_byte_.size()) fallback_byte_.resize(static_cast<size_t>(id) + 1, -1);
  fallback_byte_[id] = -1;
}

void Decoder::finish() {
  int32_t max_id = -1;
  for (const auto& p : pending_) max_id = std::max(max_id, p.first);
  std::vector<const std::string*> by_id(static_cast<size_t>(max_id + 1), nullptr);
  // Later entries win: added tokens are stored after the model's.
  for (const auto& p : pending_) by_id[p.first] = &p.second;
  off_.assign(by_id.size() + 1, 0);
  for (size_t i = 0; i < by_id.size(); ++i) {
    off_[i] = static_cast<uint32_t>(arena_.size());
    if (by_id[i]) arena_ += *by_id[i];
  }
  off_[by_id.size()] = static_cast<uint32_t>(arena_.size());
  fallback_byte_.resize(by_id.size(), -1);
  pending_.clear();
  pending_.shrink_to_fit();
}

void Decoder::end_run(std::string& run, std::string& bytes) const {
  if (run.empty()) return;
  if (find_invalid_utf8(run) == kValidUtf8) {
    // The run's text is one token for ByteLevel, mapped like any other.
    byte_level_token(run, bytes);
  } else {
    // One U+FFFD token per byte; U+FFFD is outside the byte-level alphabet.
    for (size_t i = 0; i < run.size(); ++i) bytes += "\xEF\xBF\xBD";
  }
  run.clear();
}

}  // namespace mstar::tok
