#pragma once
// A bounded cache of BPE results per pre-token, shared by all threads that
// encode with one tokenizer. It is split into shards, each behind its own
// mutex, so concurrent encoders rarely wait on each other; a shard that
// reaches its capacity is emptied and refilled, which bounds memory while
// letting the cache follow the text it sees now.
#include <cstdint>
#include <mutex>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace mstar::tok {

class WordCache {
 public:
  static constexpr size_t kMaxWordBytes = 256;  // longer words are not cached

  explicit WordCache(size_t capacity);

  // Appends the cached ids of `word` to `out` and returns true on a hit.
  bool get(std::string_view word, uint64_t hash, std::vector<int32_t>& out) const;
  void put(std::string_view word, uint64_t hash, const int32_t* ids, size_t n) const;

 private:
  struct Hash {
    using is_transparent = void;
    size_t operator()(std::string_view s) const;
  };
  struct Shard {
    std::mutex mu;
    std::unordered_map<std::string, std::vector<int32_t>, Hash, std::equal_to<>> map;
  };
  static constexpr size_t kShards = 16;
  size_t per_shard_;
  mutable Shard shards_[kShards];
};

}  // namespace mstar::tok
