#include "resources/slot_pool.h"

#include <limits>

#include <fmt/format.h>

#include "core/errors.h"

namespace mstar {

SlotPool::SlotPool(int64_t size) : held_(static_cast<size_t>(size), 0) {
  MSTAR_ASSERT(size > 0 && size <= std::numeric_limits<int32_t>::max(), "pool size out of range");
  for (int64_t s = size - 1; s >= 0; --s) free_.push_back(static_cast<int32_t>(s));
}

std::optional<int32_t> SlotPool::acquire() {
  if (free_.empty()) return std::nullopt;
  const int32_t s = free_.back();
  free_.pop_back();
  held_[static_cast<size_t>(s)] = 1;
  return s;
}

void SlotPool::release(int32_t index) {
  MSTAR_ASSERT(index >= 0 && index < size() && held(index), fmt::format("release of index {} that is not held", index));
  held_[static_cast<size_t>(index)] = 0;
  free_.push_back(index);
}

}  // namespace mstar
