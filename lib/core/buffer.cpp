#include "core/buffer.h"

#include <cstdlib>
#include <cstring>
#include <new>

namespace mstar {

ConstTensorView f32_view(const float* data, Shape shape) {
  return ConstTensorView{data, DType::f32, shape, shape.contiguous_strides(), Device::cpu};
}
TensorView f32_view(float* data, Shape shape) {
  return TensorView{data, DType::f32, shape, shape.contiguous_strides(), Device::cpu};
}

void HostBuffer::Free::operator()(void* p) const { std::free(p); }

HostBuffer::HostBuffer(DType dtype, Shape shape)
    : dtype_(dtype), shape_(shape), bytes_(static_cast<std::size_t>(shape.numel()) * dtype_size(dtype)) {
  if (bytes_ == 0) return;
  constexpr std::size_t kAlign = 64;  // a cache line, and the widest vector load
  std::size_t rounded = (bytes_ + kAlign - 1) / kAlign * kAlign;
  void* p = std::aligned_alloc(kAlign, rounded);
  if (!p) throw std::bad_alloc();
  std::memset(p, 0, rounded);
  data_.reset(p);
}

HostBuffer HostBuffer::copy() const {
  HostBuffer out(dtype_, shape_);
  if (bytes_) std::memcpy(out.data(), data(), bytes_);
  return out;
}

TensorView HostBuffer::view() { return TensorView{data(), dtype_, shape_, shape_.contiguous_strides(), Device::cpu}; }
ConstTensorView HostBuffer::view() const {
  return ConstTensorView{data(), dtype_, shape_, shape_.contiguous_strides(), Device::cpu};
}

}  // namespace mstar
