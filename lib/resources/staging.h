#pragma once
// A step's small host tables (row tables, addresses, ranges) as the ops see
// them: the host vector itself on a host backend, a copy in device memory on
// a device backend, uploaded once per step rather than once per layer.
#include <cstring>
#include <vector>

#include "core/allocator.h"

namespace mstar {

template <class T>
class Staged {
 public:
  std::vector<T> host;

  // The table in the allocator's memory; valid until the next upload.
  const T* upload(Allocator& alloc) {
    if (alloc.device() == Device::cpu || host.empty()) return host.data();
    const std::size_t bytes = host.size() * sizeof(T);
    if (device_.bytes() < bytes) device_ = DeviceBuffer(alloc, bytes * 2);
    alloc.copy_from_host(device_.data(), host.data(), bytes);
    return static_cast<const T*>(device_.data());
  }

 private:
  DeviceBuffer device_;
};

}  // namespace mstar
