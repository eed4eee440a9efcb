// The CUDA backend opens cuBLAS on first use instead of linking it, so a
// program that never multiplies on a GPU never maps it (it cost about 210 MB
// resident at start: kernels/cuda/cublas_api.h). Needs no GPU: opening the
// library and resolving its entry points does not touch a device.
#include <doctest/doctest.h>

#include <fstream>
#include <iterator>
#include <string>

#ifdef MSTAR_WITH_CUDA
#include "kernels/cuda/cublas_api.h"

namespace {

bool mapped(const std::string& name) {
  std::ifstream maps("/proc/self/maps");
  const std::string text((std::istreambuf_iterator<char>(maps)), std::istreambuf_iterator<char>());
  REQUIRE(!text.empty());
  return text.find(name) != std::string::npos;
}

}  // namespace
#endif

TEST_CASE("cuda: cuBLAS is not mapped until the backend asks for it, and then every entry point resolves") {
#ifdef MSTAR_WITH_CUDA
  CHECK_FALSE(mapped("libcublas"));
  const auto& api = mstar::kernels::cuda_detail::cublas_api();
  CHECK(mapped("libcublas"));
  CHECK(bool(api.create));
  CHECK(bool(api.set_stream));
  CHECK(bool(api.set_math_mode));
  CHECK(bool(api.sgemm));
  CHECK(bool(api.gemm_ex));
  REQUIRE(bool(api.status_string));
  // A call that needs no handle and no device: the library answers.
  CHECK(std::string(api.status_string(CUBLAS_STATUS_NOT_INITIALIZED)) == "the library was not initialized");
  CHECK(&mstar::kernels::cuda_detail::cublas_api() == &api);  // opened once
#else
  MESSAGE("skipped: this build has no CUDA backend");
#endif
}
