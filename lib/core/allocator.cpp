#include "core/allocator.h"

#include <cstring>

#include "core/host_memory.h"

namespace mstar {

namespace {

class HostAllocator final : public Allocator {
 public:
  Device device() const override { return Device::cpu; }
  void* allocate(std::size_t bytes) override { return allocate_host(bytes); }
  void deallocate(void* p, std::size_t bytes) noexcept override { free_host(p, bytes); }
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
  if (alloc) alloc->deallocate(p, bytes);
}

DeviceBuffer::DeviceBuffer(Allocator& alloc, std::size_t bytes)
    : data_(bytes ? alloc.allocate(bytes) : nullptr, AllocatorFree{&alloc, bytes}), bytes_(bytes), alloc_(&alloc) {}

}  // namespace mstar
