#include "tokenizer/word_cache.h"

#include "tokenizer/hash_tables.h"

namespace mstar::tok {

WordCache::WordCache(size_t capacity) : per_shard_(capacity / kShards + 1) {}

size_t WordCache::Hash::operator()(std::string_view s) const { return static_cast<size_t>(hash_bytes(s)); }

bool WordCache::get(std::string_view word, uint64_t hash, std::vector<int32_t>& out) const {
  Shard& s = shards_[(hash >> 59) % kShards];
  std::lock_guard lock(s.mu);
  auto it = s.map.find(word);
  if (it == s.map.end()) return false;
  out.insert(out.end(), it->second.begin(), it->second.end());
  return true;
}

void WordCache::put(std::string_view word, uint64_t hash, const int32_t* ids, size_t n) const {
  if (word.size() > kMaxWordBytes) return;
  Shard& s = shards_[(hash >> 59) % kShards];
  std::lock_guard lock(s.mu);
  if (s.map.size() >= per_shard_) s.map.clear();
  s.map.try_emplace(std::string(word), ids, ids + n);
}

}  // namespace mstar::tok
