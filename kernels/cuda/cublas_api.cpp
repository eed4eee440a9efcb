#include "kernels/cuda/cublas_api.h"

#include <dlfcn.h>

#include <stdexcept>
#include <string>

namespace mstar::kernels::cuda_detail {

namespace {

[[noreturn]] void unavailable(const std::string& what) {
  throw std::runtime_error("CUDA error: cannot use cuBLAS: " + what);
}

std::string loader_error() {
  const char* why = dlerror();
  return why ? why : "dlopen failed";
}

template <typename F>
void resolve(void* lib, const char* name, F& f) {
  void* sym = dlsym(lib, name);
  if (!sym) unavailable(std::string(MSTAR_CUBLAS_PATH ": no symbol ") + name);
  f = reinterpret_cast<F>(sym);
}

}  // namespace

const CublasApi& cublas_api() {
  static const CublasApi api = [] {
    // Never closed: the handle and the library's own state live as long as the process.
    void* lib = dlopen(MSTAR_CUBLAS_PATH, RTLD_NOW | RTLD_LOCAL);
    if (!lib) {
      const std::string first = loader_error();
      lib = dlopen(MSTAR_CUBLAS_SONAME, RTLD_NOW | RTLD_LOCAL);
      if (!lib) unavailable(first + "; " + loader_error());
    }
    CublasApi a{};
    resolve(lib, "cublasCreate_v2", a.create);
    resolve(lib, "cublasSetStream_v2", a.set_stream);
    resolve(lib, "cublasSetMathMode", a.set_math_mode);
    resolve(lib, "cublasSgemm_v2", a.sgemm);
    resolve(lib, "cublasGemmEx", a.gemm_ex);
    resolve(lib, "cublasGetStatusString", a.status_string);
    return a;
  }();
  return api;
}

}  // namespace mstar::kernels::cuda_detail
