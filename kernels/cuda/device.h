#pragma once
// The CUDA backend's device: its allocator, its one stream, and whether a GPU
// is visible (defined in kernels/cuda/device.cu, built only with CUDA).
#include <string>

#include "core/allocator.h"

namespace mstar::kernels {

// False, with the reason in `why`, when no usable GPU is visible.
bool cuda_device_available(std::string* why);
Allocator& cuda_allocator();
void cuda_synchronize();

}  // namespace mstar::kernels
