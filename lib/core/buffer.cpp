#include "core/buffer.h"

#include <cstring>

#include "core/host_memory.h"

namespace mstar {

ConstTensorView f32_view(const float* data, Shape shape) {
  return ConstTensorView{data, DType::f32, shape, shape.contiguous_strides(), Device::cpu};
}
TensorView f32_view(float* data, Shape shape) {
  return TensorView{data, DType::f32, shape, shape.contiguous_strides(), Device::cpu};
}

void HostBuffer::Free::operator()(void* p) const { free_host(p, bytes); }

HostBuffer::HostBuffer(DType dtype, Shape shape)
    : dtype_(dtype), shape_(shape), bytes_(row_bytes(dtype, shape.numel())) {
  if (bytes_ == 0) return;
  data_ = std::unique_ptr<void, Free>(allocate_host(bytes_), Free{bytes_});
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
