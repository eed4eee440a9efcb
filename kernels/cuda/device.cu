// The CUDA backend's device: one stream for everything the backend does, the
// allocator over it, a cuBLAS handle bound to it, a grow-only workspace, the
// error check, whether a GPU is visible, and the bandwidth probe.
//
// Lifetimes: the stream, the handle and the workspace are created on first
// use and never destroyed. Buffers held by static objects are freed at exit,
// possibly after the CUDA runtime has begun tearing down; a stream destroyed
// by then would turn those frees into errors, and there is no one left to
// report them to. The process's exit releases the device.
#include <algorithm>
#include <cstdio>
#include <mutex>
#include <new>
#include <stdexcept>
#include <string>
#include <vector>

#include "kernels/cuda/common.cuh"
#include "kernels/cuda/device.h"

namespace mstar::kernels {

namespace cuda_detail {

void fail(const char* call, const char* file, int line, const char* what) {
  throw std::runtime_error(std::string("CUDA error: ") + call + " at " + file + ":" + std::to_string(line) + ": " +
                           what);
}

void check(cudaError_t e, const char* call, const char* file, int line) {
  if (e == cudaSuccess) return;
  (void)cudaGetLastError();  // clear a non-sticky error so it is not reported twice
  fail(call, file, line, cudaGetErrorString(e));
}

void check(cublasStatus_t s, const char* call, const char* file, int line) {
  if (s == CUBLAS_STATUS_SUCCESS) return;
  fail(call, file, line, cublas_api().status_string(s));
}

namespace {

struct State {
  cudaStream_t stream = nullptr;
  int sms = 0;
  std::size_t smem_optin = 0;
};

const State& state() {
  // Initialised once, thread-safely; if it throws (no device), the next call tries again.
  static const State s = [] {
    State st;
    int dev = 0;
    MSTAR_CUDA_CHECK(cudaGetDevice(&dev));
    MSTAR_CUDA_CHECK(cudaDeviceGetAttribute(&st.sms, cudaDevAttrMultiProcessorCount, dev));
    int optin = 0;
    MSTAR_CUDA_CHECK(cudaDeviceGetAttribute(&optin, cudaDevAttrMaxSharedMemoryPerBlockOptin, dev));
    st.smem_optin = static_cast<std::size_t>(optin);
    // Non-blocking: nothing else in the process (the legacy default stream)
    // serialises with it; the backend orders its own work on it.
    MSTAR_CUDA_CHECK(cudaStreamCreateWithFlags(&st.stream, cudaStreamNonBlocking));
    return st;
  }();
  return s;
}

struct Workspace {
  std::mutex mutex;
  void* ptr = nullptr;
  std::size_t bytes = 0;
};

Workspace& scratch() {
  static Workspace* w = new Workspace;  // never destroyed (see the top of the file)
  return *w;
}

}  // namespace

cudaStream_t stream() { return state().stream; }
int sm_count() { return state().sms; }
std::size_t smem_optin() { return state().smem_optin; }

cublasHandle_t cublas() {
  static const cublasHandle_t h = [] {
    cublasHandle_t x = nullptr;
    const CublasApi& api = cublas_api();
    MSTAR_CUDA_CHECK(api.create(&x));
    MSTAR_CUDA_CHECK(api.set_stream(x, stream()));
    // Default math: f32 products stay f32 (no TF32); reduced-precision inputs
    // are the caller's explicit choice (cublasGemmEx with 16-bit operands).
    MSTAR_CUDA_CHECK(api.set_math_mode(x, CUBLAS_DEFAULT_MATH));
    return x;
  }();
  return h;
}

void* workspace(std::size_t bytes) {
  Workspace& w = scratch();
  const std::lock_guard<std::mutex> lock(w.mutex);
  if (bytes > w.bytes) {
    // Grow by half again at least, so a workload that creeps up settles fast.
    const std::size_t want = align256(std::max(bytes, w.bytes + w.bytes / 2));
    if (w.ptr) {
      MSTAR_CUDA_CHECK(cudaStreamSynchronize(stream()));  // nothing enqueued still uses the old block
      MSTAR_CUDA_CHECK(cudaFree(w.ptr));
      w.ptr = nullptr;
      w.bytes = 0;
    }
    MSTAR_CUDA_CHECK(cudaMalloc(&w.ptr, want));
    w.bytes = want;
  }
  return w.ptr;
}

}  // namespace cuda_detail

namespace {

using cuda_detail::stream;

// Out of device memory: a std::bad_alloc (what the Allocator interface
// promises), saying how much was asked for.
class CudaOutOfMemory final : public std::bad_alloc {
 public:
  explicit CudaOutOfMemory(std::size_t bytes)
      : what_("cudaMalloc: out of device memory allocating " + std::to_string(bytes) + " bytes") {}
  const char* what() const noexcept override { return what_.c_str(); }

 private:
  std::string what_;
};

// Device memory, no caching: each allocate is a cudaMalloc, each deallocate
// a cudaFree. Allocation is not on any hot path (resources and models
// allocate up front; scratch grows and stays).
class CudaAllocator final : public Allocator {
 public:
  Device device() const override { return Device::cuda; }

  void* allocate(std::size_t bytes) override {
    const std::size_t n = bytes == 0 ? 256 : bytes;  // cudaMalloc aligns to 256 bytes: fine for any vector load
    void* p = nullptr;
    const cudaError_t e = cudaMalloc(&p, n);
    if (e == cudaErrorMemoryAllocation) {
      (void)cudaGetLastError();
      throw CudaOutOfMemory(n);
    }
    MSTAR_CUDA_CHECK(e);
    try {
      // Zero-filled and ready when returned: the fill is on the stream, so
      // the wait also covers it for a caller that then uses another stream.
      MSTAR_CUDA_CHECK(cudaMemsetAsync(p, 0, n, stream()));
      MSTAR_CUDA_CHECK(cudaStreamSynchronize(stream()));
    } catch (...) {
      (void)cudaFree(p);
      throw;
    }
    return p;
  }

  void deallocate(void* p, std::size_t) noexcept override {
    if (!p) return;
    // Work already enqueued may still use this memory: wait for it first.
    // Nothing can be reported from here (noexcept, and at exit the runtime
    // may already be gone); a failure that matters shows at the next check.
    (void)cudaStreamSynchronize(stream());
    (void)cudaFree(p);
    (void)cudaGetLastError();
  }

  void fill_zero(void* dst, std::size_t bytes) override {
    if (bytes) MSTAR_CUDA_CHECK(cudaMemsetAsync(dst, 0, bytes, stream()));
  }

  // From pageable host memory: the runtime copies the source into its own
  // staging memory before the call returns (CUDA runtime API, "API
  // synchronization behavior"), so the caller may reuse or free it at once;
  // the transfer itself is ordered on the stream like every kernel, after
  // the work that may still read `dst` and before the work that reads it.
  void copy_from_host(void* dst, const void* src, std::size_t bytes) override {
    if (bytes) MSTAR_CUDA_CHECK(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyHostToDevice, stream()));
  }

  // Returns with the data on the host: waits for the stream (the copy and
  // everything before it).
  void copy_to_host(void* dst, const void* src, std::size_t bytes) override {
    if (!bytes) return;
    MSTAR_CUDA_CHECK(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDeviceToHost, stream()));
    MSTAR_CUDA_CHECK(cudaStreamSynchronize(stream()));
  }

  // Within device memory. The host allocator's copy is a memmove; a device
  // copy between overlapping ranges is undefined, so overlapping ranges go
  // through the workspace.
  void copy(void* dst, const void* src, std::size_t bytes) override {
    if (!bytes || dst == src) return;
    const auto* d = static_cast<const unsigned char*>(dst);
    const auto* s = static_cast<const unsigned char*>(src);
    if (d < s + bytes && s < d + bytes) {
      void* tmp = cuda_detail::workspace(bytes);
      MSTAR_CUDA_CHECK(cudaMemcpyAsync(tmp, src, bytes, cudaMemcpyDeviceToDevice, stream()));
      MSTAR_CUDA_CHECK(cudaMemcpyAsync(dst, tmp, bytes, cudaMemcpyDeviceToDevice, stream()));
      return;
    }
    MSTAR_CUDA_CHECK(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDeviceToDevice, stream()));
  }
};

// a[i] = b[i] + s * c[i] over n float4s: two reads and a write per element.
__global__ void triad_kernel(float4* __restrict__ a, const float4* __restrict__ b, const float4* __restrict__ c,
                             float s, int64_t n) {
  for (int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    const float4 x = b[i], y = c[i];
    a[i] = make_float4(x.x + s * y.x, x.y + s * y.y, x.z + s * y.z, x.w + s * y.w);
  }
}

__global__ void fill_kernel(float4* __restrict__ a, float v, int64_t n) {
  for (int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<int64_t>(gridDim.x) * blockDim.x)
    a[i] = make_float4(v, v, v, v);
}

// Device memory owned for the length of one measurement.
struct Owned {
  void* p = nullptr;
  explicit Owned(std::size_t bytes) {
    const cudaError_t e = cudaMalloc(&p, bytes);
    if (e == cudaErrorMemoryAllocation) {
      (void)cudaGetLastError();
      throw CudaOutOfMemory(bytes);
    }
    MSTAR_CUDA_CHECK(e);
  }
  ~Owned() {
    (void)cudaStreamSynchronize(stream());
    (void)cudaFree(p);
  }
  Owned(const Owned&) = delete;
  Owned& operator=(const Owned&) = delete;
  float4* f4() const { return static_cast<float4*>(p); }
};

struct Event {
  cudaEvent_t e = nullptr;
  Event() { MSTAR_CUDA_CHECK(cudaEventCreate(&e)); }
  ~Event() { (void)cudaEventDestroy(e); }
  Event(const Event&) = delete;
  Event& operator=(const Event&) = delete;
};

}  // namespace

bool cuda_device_available(std::string* why) {
  auto no = [&](const std::string& reason) {
    (void)cudaGetLastError();
    if (why) *why = reason;
    return false;
  };
  int count = 0;
  cudaError_t e = cudaGetDeviceCount(&count);
  if (e != cudaSuccess)
    return no(std::string("cudaGetDeviceCount failed: ") + cudaGetErrorName(e) + " (" + cudaGetErrorString(e) + ")");
  if (count == 0) return no("cudaGetDeviceCount found no CUDA device");
  int dev = 0;
  e = cudaGetDevice(&dev);
  if (e != cudaSuccess)
    return no(std::string("cudaGetDevice failed: ") + cudaGetErrorName(e) + " (" + cudaGetErrorString(e) + ")");
  int major = 0, minor = 0;
  e = cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, dev);
  if (e == cudaSuccess) e = cudaDeviceGetAttribute(&minor, cudaDevAttrComputeCapabilityMinor, dev);
  if (e != cudaSuccess)
    return no(std::string("cudaDeviceGetAttribute failed: ") + cudaGetErrorName(e) + " (" + cudaGetErrorString(e) + ")");
  if (major < 8)
    return no("device " + std::to_string(dev) + " has compute capability " + std::to_string(major) + "." +
              std::to_string(minor) + "; this build carries code for 8.0 and newer (sm_80, sm_90, compute_90)");
  // The products need cuBLAS, opened here (only where a device is) so that a
  // missing library is refused before anything runs, not at the first product.
  try {
    (void)cuda_detail::cublas_api();
  } catch (const std::runtime_error& err) {
    return no(err.what());
  }
  return true;
}

Allocator& cuda_allocator() {
  static CudaAllocator a;
  return a;
}

void cuda_synchronize() { MSTAR_CUDA_CHECK(cudaStreamSynchronize(stream())); }

CudaBandwidth cuda_bandwidth(int64_t bytes, int repeats) {
  repeats = std::max(1, repeats);
  const int64_t n4 = std::max<int64_t>(1, bytes / 16);
  const auto size = static_cast<std::size_t>(n4 * 16);
  Owned a(size), b(size), c(size);
  const int threads = 256;
  const unsigned blocks = cuda_detail::grid_for(n4, threads);
  fill_kernel<<<blocks, threads, 0, stream()>>>(a.f4(), 1.0f, n4);
  MSTAR_CUDA_LAUNCHED("fill_kernel");
  fill_kernel<<<blocks, threads, 0, stream()>>>(b.f4(), 2.0f, n4);
  MSTAR_CUDA_LAUNCHED("fill_kernel");
  fill_kernel<<<blocks, threads, 0, stream()>>>(c.f4(), 0.5f, n4);
  MSTAR_CUDA_LAUNCHED("fill_kernel");
  Event t0, t1, t2;
  std::vector<double> copy, triad;
  for (int r = 0; r <= repeats; ++r) {  // round 0 warms up and is not counted
    MSTAR_CUDA_CHECK(cudaEventRecord(t0.e, stream()));
    MSTAR_CUDA_CHECK(cudaMemcpyAsync(c.p, a.p, size, cudaMemcpyDeviceToDevice, stream()));
    MSTAR_CUDA_CHECK(cudaEventRecord(t1.e, stream()));
    triad_kernel<<<blocks, threads, 0, stream()>>>(a.f4(), b.f4(), c.f4(), 3.0f, n4);
    MSTAR_CUDA_LAUNCHED("triad_kernel");
    MSTAR_CUDA_CHECK(cudaEventRecord(t2.e, stream()));
    MSTAR_CUDA_CHECK(cudaEventSynchronize(t2.e));
    float copy_ms = 0, triad_ms = 0;
    MSTAR_CUDA_CHECK(cudaEventElapsedTime(&copy_ms, t0.e, t1.e));
    MSTAR_CUDA_CHECK(cudaEventElapsedTime(&triad_ms, t1.e, t2.e));
    if (r == 0) continue;
    copy.push_back(2.0 * static_cast<double>(size) / (copy_ms * 1e-3) / 1e9);
    triad.push_back(3.0 * static_cast<double>(size) / (triad_ms * 1e-3) / 1e9);
  }
  auto median = [](std::vector<double> v) {
    std::sort(v.begin(), v.end());
    return v[v.size() / 2];
  };
  CudaBandwidth bw;
  bw.copy_gbs = *std::max_element(copy.begin(), copy.end());
  bw.triad_gbs = *std::max_element(triad.begin(), triad.end());
  bw.copy_median_gbs = median(copy);
  bw.triad_median_gbs = median(triad);
  bw.array_bytes = static_cast<int64_t>(size);
  int dev = 0;
  cudaDeviceProp prop{};
  MSTAR_CUDA_CHECK(cudaGetDevice(&dev));
  MSTAR_CUDA_CHECK(cudaGetDeviceProperties(&prop, dev));
  bw.device = prop.name;
  return bw;
}

}  // namespace mstar::kernels
