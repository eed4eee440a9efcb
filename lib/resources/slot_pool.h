#pragma once
// A fixed pool of indices (a bounded resource's slots, a ring's sessions),
// handed out and returned; the most recently freed is reused first.
#include <cstdint>
#include <optional>
#include <vector>

namespace mstar {

class SlotPool {
 public:
  explicit SlotPool(int64_t size);
  [[nodiscard]] std::optional<int32_t> acquire();
  void release(int32_t index);
  int64_t size() const { return static_cast<int64_t>(held_.size()); }
  int64_t free_count() const { return static_cast<int64_t>(free_.size()); }
  int64_t in_use() const { return size() - free_count(); }
  bool held(int32_t index) const { return held_[static_cast<size_t>(index)] != 0; }

 private:
  std::vector<int32_t> free_;  // a stack
  std::vector<uint8_t> held_;
};

}  // namespace mstar
