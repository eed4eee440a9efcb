#pragma once
// The CUDA backend's device: its allocator, its one stream, and whether a GPU
// is visible (defined in kernels/cuda/device.cu, built only with CUDA).
#include <cstdint>
#include <string>

#include "core/allocator.h"

namespace mstar::kernels {

// False, with the reason in `why`, when no usable GPU is visible (no driver,
// no device, or one older than the code this build carries, compute
// capability 8.0). Never aborts.
bool cuda_device_available(std::string* why);
// Device memory: cudaMalloc'd, zero-filled and ready when returned; copies
// are ordered on the backend's stream (copy_to_host returns with the data).
Allocator& cuda_allocator();
// Waits for everything enqueued on the backend's stream; throws
// std::runtime_error naming the failure when a kernel failed.
void cuda_synchronize();

// The device's memory bandwidth, STREAM-style over three arrays of `bytes`
// each: copy (device-to-device cudaMemcpyAsync, read + write counted) and
// triad (a = b + s * c, a kernel: two reads and a write counted), best and
// median of `repeats`, timed with events on the backend's stream.
struct CudaBandwidth {
  double copy_gbs = 0, triad_gbs = 0;
  double copy_median_gbs = 0, triad_median_gbs = 0;
  int64_t array_bytes = 0;
  std::string device;  // the GPU's name
};
CudaBandwidth cuda_bandwidth(int64_t bytes, int repeats);

}  // namespace mstar::kernels
