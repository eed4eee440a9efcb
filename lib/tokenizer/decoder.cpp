#include "tokenizer/decoder.h"

#include <algorithm>
#include <optional>

#include "tokenizer/byte_level.h"

namespace mstar::tok {

void TokenBytes::check_decoder(const JsonAt& j) {
  j.expect_object();
  const JsonAt type = j.at("type");
  const JsonAt* byte_level = &j;
  std::optional<JsonAt> only;
  if (type.str() == "Sequence") {
    j.only_keys({"type", "decoders"});
    const JsonAt list = j.at("decoders");
    // Two ByteLevel steps would map the decoded text's characters again.
    if (list.size() != 1) list.fail("a decoder Sequence must hold exactly one ByteLevel decoder");
    only = list[0];
    only->expect_object();
    byte_level = &*only;
  }
  const JsonAt t = byte_level->at("type");
  if (t.str() != "ByteLevel") t.unsupported("supported decoders: ByteLevel, a Sequence of one ByteLevel");
  // These three change offsets or encoding only; ByteLevel decoding ignores them.
  byte_level->only_keys({"type", "add_prefix_space", "trim_offsets", "use_regex"});
}

void TokenBytes::set_model(int32_t id, std::string_view token) {
  auto bytes = byte_level_decode(token);
  pending_.emplace_back(id, bytes ? std::move(*bytes) : std::string(token));
}

void TokenBytes::set_added(int32_t id, std::string_view content) { pending_.emplace_back(id, std::string(content)); }

void TokenBytes::finish() {
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
  pending_.clear();
  pending_.shrink_to_fit();
}

}  // namespace mstar::tok
