#pragma once
// Owned host buffers and non-owning views. A view is what crosses an API: it
// says where the numbers are and how to step through them, and owns nothing.
#include <cstddef>
#include <cstdint>
#include <memory>
#include <type_traits>

#include "core/device.h"
#include "core/dtype.h"
#include "core/shape.h"

namespace mstar {

template <class Ptr>
struct BasicView {
  Ptr data = nullptr;
  DType dtype = DType::f32;
  Shape shape;
  Shape strides;  // in elements
  Device device = Device::cpu;

  int64_t numel() const { return shape.numel(); }
  bool is_contiguous() const { return strides == shape.contiguous_strides(); }
  // A mutable view reads as a const one.
  operator BasicView<const void*>() const
    requires std::is_same_v<Ptr, void*>
  {
    return {data, dtype, shape, strides, device};
  }
};

using TensorView = BasicView<void*>;
using ConstTensorView = BasicView<const void*>;

// A contiguous f32 view of caller memory: the common case at API edges.
ConstTensorView f32_view(const float* data, Shape shape);
TensorView f32_view(float* data, Shape shape);

// An owned, 64-byte aligned, contiguous host buffer. Move-only: copying KV
// storage is expensive and must be asked for with copy().
class HostBuffer {
 public:
  HostBuffer() = default;
  HostBuffer(DType dtype, Shape shape);  // zero-filled
  HostBuffer(HostBuffer&&) noexcept = default;
  HostBuffer& operator=(HostBuffer&&) noexcept = default;
  HostBuffer(const HostBuffer&) = delete;
  HostBuffer& operator=(const HostBuffer&) = delete;

  HostBuffer copy() const;

  void* data() { return data_.get(); }
  const void* data() const { return data_.get(); }
  DType dtype() const { return dtype_; }
  const Shape& shape() const { return shape_; }
  std::size_t bytes() const { return bytes_; }

  TensorView view();
  ConstTensorView view() const;

 private:
  struct Free {
    // As allocated. No initializer: one would keep Free from being
    // default-constructible inside HostBuffer, and unique_ptr needs it so.
    std::size_t bytes;
    void operator()(void* p) const;
  };
  std::unique_ptr<void, Free> data_;
  DType dtype_ = DType::f32;
  Shape shape_;
  std::size_t bytes_ = 0;
};

}  // namespace mstar
