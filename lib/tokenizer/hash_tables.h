#pragma once
// Open-addressing tables for the two lookups the BPE loop does per symbol:
// bytes -> token id, and (left id, right id) -> merge. std::unordered_map
// allocates a node per entry and chases a pointer per probe; these keep
// entries in one array.
#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>
#include <vector>

namespace mstar::tok {

inline uint64_t mix64(uint64_t x) {
  x ^= x >> 32;
  x *= 0xd6e8feb86659fd93ull;
  x ^= x >> 32;
  x *= 0xd6e8feb86659fd93ull;
  x ^= x >> 32;
  return x;
}

inline uint64_t hash_bytes(std::string_view s) {
  uint64_t h = 0x9E3779B97F4A7C15ull ^ (s.size() * 0xff51afd7ed558ccdull);
  size_t i = 0;
  for (; i + 8 <= s.size(); i += 8) {
    uint64_t w;
    std::memcpy(&w, s.data() + i, 8);
    h = (h ^ mix64(w)) * 0x9FB21C651E98DF25ull;
  }
  if (i < s.size()) {
    uint64_t w = 0;
    std::memcpy(&w, s.data() + i, s.size() - i);
    h = (h ^ mix64(w ^ 0xA5)) * 0x9FB21C651E98DF25ull;
  }
  return mix64(h);
}

// Byte string -> int32 id; keys are copied into one arena.
class BytesIdMap {
 public:
  void reserve(size_t n) {
    size_t cap = 16;
    while (cap < n * 2) cap <<= 1;
    slots_.assign(cap, Slot{});
    mask_ = cap - 1;
  }
  size_t size() const { return count_; }

  // Returns false (and changes nothing) when the key is already present.
  bool insert(std::string_view key, int32_t id) {
    if ((count_ + 1) * 2 > slots_.size()) grow();
    const uint64_t h = hash_bytes(key);
    for (size_t i = h & mask_;; i = (i + 1) & mask_) {
      Slot& s = slots_[i];
      if (s.id < 0) {
        s = Slot{h, static_cast<uint32_t>(arena_.size()), static_cast<uint32_t>(key.size()), id};
        arena_.append(key);
        ++count_;
        return true;
      }
      if (s.hash == h && view(s) == key) return false;
    }
  }

  int32_t find(std::string_view key) const { return find(key, hash_bytes(key)); }
  int32_t find(std::string_view key, uint64_t h) const {
    if (slots_.empty()) return -1;
    for (size_t i = h & mask_;; i = (i + 1) & mask_) {
      const Slot& s = slots_[i];
      if (s.id < 0) return -1;
      if (s.hash == h && s.len == key.size() && std::memcmp(arena_.data() + s.off, key.data(), key.size()) == 0)
        return s.id;
    }
  }

 private:
  struct Slot {
    uint64_t hash = 0;
    uint32_t off = 0, len = 0;
    int32_t id = -1;
  };
  std::string_view view(const Slot& s) const { return std::string_view(arena_).substr(s.off, s.len); }
  void grow() {
    std::vector<Slot> old = std::move(slots_);
    reserve(old.empty() ? 8 : old.size());
    for (const Slot& s : old) {
      if (s.id < 0) continue;
      for (size_t i = s.hash & mask_;; i = (i + 1) & mask_) {
        if (slots_[i].id < 0) {
          slots_[i] = s;
          break;
        }
      }
    }
  }

  std::vector<Slot> slots_;
  std::string arena_;
  size_t mask_ = 0, count_ = 0;
};

// (left id, right id) -> (rank << 32 | merged id). A later insert of the same
// pair replaces the earlier value.
class MergeMap {
 public:
  static constexpr uint64_t kNone = UINT64_MAX;

  void reserve(size_t n) {
    size_t cap = 16;
    while (cap < n * 2) cap <<= 1;
    keys_.assign(cap, kNone);
    values_.assign(cap, kNone);
    mask_ = cap - 1;
  }
  void insert(int32_t a, int32_t b, uint32_t rank, int32_t merged) {
    if ((count_ + 1) * 2 > keys_.size()) grow();
    const uint64_t k = key(a, b);
    for (size_t i = mix64(k) & mask_;; i = (i + 1) & mask_) {
      if (keys_[i] == kNone || keys_[i] == k) {
        if (keys_[i] == kNone) ++count_;
        keys_[i] = k;
        values_[i] = (static_cast<uint64_t>(rank) << 32) | static_cast<uint32_t>(merged);
        return;
      }
    }
  }
  // kNone when the pair has no merge; compare values to compare ranks.
  uint64_t find(int32_t a, int32_t b) const {
    if (keys_.empty()) return kNone;
    const uint64_t k = key(a, b);
    for (size_t i = mix64(k) & mask_;; i = (i + 1) & mask_) {
      if (keys_[i] == k) return values_[i];
      if (keys_[i] == kNone) return kNone;
    }
  }
  size_t size() const { return count_; }
  static int32_t merged(uint64_t v) { return static_cast<int32_t>(v & 0xFFFFFFFFu); }
  static uint32_t rank(uint64_t v) { return static_cast<uint32_t>(v >> 32); }

 private:
  static uint64_t key(int32_t a, int32_t b) {
    return (static_cast<uint64_t>(static_cast<uint32_t>(a)) << 32) | static_cast<uint32_t>(b);
  }
  void grow() {
    std::vector<uint64_t> ok = std::move(keys_), ov = std::move(values_);
    reserve(ok.empty() ? 8 : ok.size());
    count_ = 0;
    for (size_t j = 0; j < ok.size(); ++j)
      if (ok[j] != kNone)
        insert(static_cast<int32_t>(ok[j] >> 32), static_cast<int32_t>(ok[j] & 0xFFFFFFFFu), rank(ov[j]),
               merged(ov[j]));
  }

  std::vector<uint64_t> keys_, values_;
  size_t mask_ = 0, count_ = 0;
};

}  // namespace mstar::tok
