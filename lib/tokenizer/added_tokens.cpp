#include "tokenizer/added_tokens.h"

#include <algorithm>

namespace mstar::tok {

AddedTokenMatcher::AddedTokenMatcher() : nodes_(1) { std::fill(std::begin(root_), std::end(root_), kNone); }

uint32_t AddedTokenMatcher::child(uint32_t node, unsigned char b) const {
  const auto& next = nodes_[node].next;
  auto it = std::lower_bound(next.begin(), next.end(), b, [](const auto& e, unsigned char v) { return e.first < v; });
  return it != next.end() && it->first == b ? it->second : kNone;
}

void AddedTokenMatcher::add(std::string_view content, int32_t id) {
  uint32_t node = 0;
  for (size_t k = 0; k < content.size(); ++k) {
    const auto b = static_cast<unsigned char>(content[k]);
    uint32_t next = k == 0 ? root_[b] : child(node, b);
    if (next == kNone) {
      next = static_cast<uint32_t>(nodes_.size());
      nodes_.emplace_back();
      if (k == 0) {
        root_[b] = next;
      } else {
        auto& edges = nodes_[node].next;
        auto it = std::lower_bound(edges.begin(), edges.end(), b,
                                   [](const auto& e, unsigned char v) { return e.first < v; });
        edges.insert(it, {b, next});
      }
    }
    node = next;
  }
  nodes_[node].id = id;
}

}  // namespace mstar::tok
