#pragma once
// Requests in arrival order, released step by step.
#include <algorithm>
#include <cstdint>
#include <vector>

#include "engine/requests.h"

namespace mstar {

class Arrivals {
 public:
  explicit Arrivals(std::vector<RequestItem> items) : items_(std::move(items)) {
    std::stable_sort(items_.begin(), items_.end(),
                     [](const RequestItem& a, const RequestItem& b) { return arrival_of(a) < arrival_of(b); });
  }
  bool empty() const { return next_ >= items_.size(); }
  // Everything arriving at or before `step`, in order.
  std::vector<RequestItem> take(int64_t step) {
    std::vector<RequestItem> out;
    while (next_ < items_.size() && arrival_of(items_[next_]) <= step) out.push_back(std::move(items_[next_++]));
    return out;
  }

 private:
  std::vector<RequestItem> items_;
  size_t next_ = 0;
};

}  // namespace mstar
