#pragma once
// Added tokens (tokenizer.json's "added_tokens") are cut out of the text
// before anything else sees it: at each position the leftmost match wins, the
// longest among matches starting there, as the reference's Aho-Corasick
// (LeftmostLongest) does.
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace mstar::tok {

struct AddedToken {
  int32_t id = -1;
  std::string content;
  bool special = false;
  bool normalized = false;
};

class AddedTokenMatcher {
 public:
  AddedTokenMatcher();
  void add(std::string_view content, int32_t id);
  bool empty() const { return nodes_.size() == 1; }

  // Cuts `text` into pieces: plain text (id -1) and added tokens (their id),
  // in order, covering the whole text; empty plain pieces are not emitted.
  template <class F>
  void split(std::string_view text, F&& emit) const {
    size_t plain = 0, i = 0;
    const size_t n = text.size();
    while (i < n) {
      uint32_t node = root_[static_cast<unsigned char>(text[i])];
      if (node == kNone) {
        ++i;
        continue;
      }
      int32_t best_id = nodes_[node].id;
      size_t best_end = best_id >= 0 ? i + 1 : 0;
      for (size_t k = i + 1; k < n; ++k) {
        node = child(node, static_cast<unsigned char>(text[k]));
        if (node == kNone) break;
        if (nodes_[node].id >= 0) {
          best_id = nodes_[node].id;
          best_end = k + 1;
        }
      }
      if (best_end == 0) {
        ++i;
        continue;
      }
      if (plain < i) emit(text.substr(plain, i - plain), -1);
      emit(text.substr(i, best_end - i), best_id);
      i = plain = best_end;
    }
    if (plain < n) emit(text.substr(plain), -1);
  }

 private:
  static constexpr uint32_t kNone = UINT32_MAX;
  struct Node {
    int32_t id = -1;
    std::vector<std::pair<unsigned char, uint32_t>> next;  // sorted by byte
  };
  uint32_t child(uint32_t node, unsigned char b) const;

  std::vector<Node> nodes_;
  uint32_t root_[256];
};

}  // namespace mstar::tok
