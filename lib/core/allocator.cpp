#include "core/allocator.h"

#include <cstdlib>
#include <cstring>
#include <new>

namespace mstar {

namespace {

class HostAllocator final : public Allocator {
 public:
  Device device() const override { return Device::cpu; }
  void* allocate(std::size_t bytes) override {
    constexpr std::size_t kAlign = 64;  // a cache line, and the widest vector load
    const std::size_t rounded = (bytes + kAlign - 1) / kAlign * kAlign;
    void* p = std::aligned_alloc(kAlign, rounded == 0 ? kAlign : rounded);
    if (!p) throw std::bad_alloc();
    std::memset(p, 0, rounded);
    return p;
  }
  void deallocate(void* p) noexcept override { std::free(p); }
  void fill_zero(void* dst, std::size_t bytes) override { std::memset(dst, 0, bytes); }
  void copy_from_host(void* dst, const void* src, std::size_t bytes) override { std::memcpy(dst, src, bytes); }
  void copy_to_host(void* dst, const void* src, std::size_t bytes) override { std::memcpy(dst, src, bytes); }
  void copy(void* dst, const void* src, std::size_t bytes) override { std::memmove(dst, src, bytes); }
};

}  // namespace

Allocator& host_allocator() {
  static HostAllocator a;
  return a;
}

void AllocatorFree::operator()(void* p) const noexcept {
  if (alloc) alloc->deallocate(p);
}

DeviceBuffer::DeviceBuffer(Allocator& alloc, std::size_t bytes)
    : data_(bytes ? alloc.allocate(bytes) : nullptr, AllocatorFree{&alloc}), bytes_(bytes), alloc_(&alloc) {}

}  // namespace mstar
