#pragma once
// Working buffers in a backend's memory, one per named use, grown when a
// step needs more and kept between steps (so a steady stream allocates
// nothing). Contents do not survive growth.
#include <cstddef>
#include <map>
#include <span>

#include "core/allocator.h"

namespace mstar {

class DeviceScratch {
 public:
  explicit DeviceScratch(Allocator& alloc) : alloc_(alloc) {}

  template <class T>
  T* get(int use, std::size_t count) {
    DeviceBuffer& b = buffers_[use];
    const std::size_t bytes = count * sizeof(T);
    if (b.bytes() < bytes) b = DeviceBuffer(alloc_, bytes + bytes / 2);
    return static_cast<T*>(b.data());
  }
  // A host array copied into buffer `use`.
  template <class T>
  T* upload(int use, std::span<const T> host) {
    T* p = get<T>(use, host.size());
    if (!host.empty()) alloc_.copy_from_host(p, host.data(), host.size_bytes());
    return p;
  }
  Allocator& allocator() { return alloc_; }

 private:
  Allocator& alloc_;
  std::map<int, DeviceBuffer> buffers_;
};

}  // namespace mstar
