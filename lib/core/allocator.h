#pragma once
// Where a backend's buffers come from. Resources and models take their
// storage from the allocator of the backend they run on (host memory for
// reference and cpu, device memory for cuda) and never touch it except
// through kernel ops and the copies below, so a new device is an allocator
// plus kernels, nothing else.
#include <cstddef>
#include <memory>

#include "core/device.h"

namespace mstar {

class Allocator {
 public:
  virtual ~Allocator() = default;
  virtual Device device() const = 0;
  // At least `bytes` bytes, aligned for any vector load, zero-filled.
  // Throws std::bad_alloc (or a device's out-of-memory error) on failure.
  virtual void* allocate(std::size_t bytes) = 0;
  // `bytes`: what allocate was asked for.
  virtual void deallocate(void* p, std::size_t bytes) noexcept = 0;
  virtual void fill_zero(void* dst, std::size_t bytes) = 0;
  virtual void copy_from_host(void* dst, const void* src, std::size_t bytes) = 0;
  virtual void copy_to_host(void* dst, const void* src, std::size_t bytes) = 0;
  // Within this allocator's memory.
  virtual void copy(void* dst, const void* src, std::size_t bytes) = 0;
};

// Plain host memory (64-byte aligned): what the reference and cpu backends use.
Allocator& host_allocator();

// Returns memory to the allocator it came from.
struct AllocatorFree {
  Allocator* alloc = nullptr;
  std::size_t bytes = 0;
  void operator()(void* p) const noexcept;
};

// Owned bytes from one allocator; move-only, since copying KV storage is
// expensive and must be asked for.
class DeviceBuffer {
 public:
  DeviceBuffer() = default;
  DeviceBuffer(Allocator& alloc, std::size_t bytes);  // zero-filled
  DeviceBuffer(DeviceBuffer&&) noexcept = default;
  DeviceBuffer& operator=(DeviceBuffer&&) noexcept = default;

  void* data() { return data_.get(); }
  const void* data() const { return data_.get(); }
  std::size_t bytes() const { return bytes_; }
  Allocator* allocator() const { return alloc_; }
  Device device() const { return alloc_ ? alloc_->device() : Device::cpu; }

 private:
  std::unique_ptr<void, AllocatorFree> data_;
  std::size_t bytes_ = 0;
  Allocator* alloc_ = nullptr;
};

}  // namespace mstar
