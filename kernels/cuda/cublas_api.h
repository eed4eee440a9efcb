#pragma once
// cuBLAS, opened when the CUDA backend first needs it rather than linked.
// Linked, its two libraries (libcublas and the libcublasLt it needs) were
// loaded into every mstar program at start, GPU or not: `mstar-check --help`
// peaked at 219 MB resident, against 5.3 MB without them (`/usr/bin/time -f
// %M`; docs/PERFORMANCE.md, "CUDA backend"). Most runs use the cpu backend,
// and `mstar-check` none.
#include <cublas_v2.h>

namespace mstar::kernels::cuda_detail {

// The entry points the backend calls, with cuBLAS's own signatures (the
// _v2 names are what cublas_v2.h's macros call).
struct CublasApi {
  decltype(&cublasCreate_v2) create;
  decltype(&cublasSetStream_v2) set_stream;
  decltype(&cublasSetMathMode) set_math_mode;
  decltype(&cublasSgemm_v2) sgemm;
  // cublasGemmEx has a second, inline overload (a cudaDataType compute
  // type, for old code): this is the library's.
  cublasStatus_t (*gemm_ex)(cublasHandle_t, cublasOperation_t, cublasOperation_t, int m, int n, int k,
                            const void* alpha, const void* a, cudaDataType a_type, int lda, const void* b,
                            cudaDataType b_type, int ldb, const void* beta, void* c, cudaDataType c_type, int ldc,
                            cublasComputeType_t compute, cublasGemmAlgo_t algo);
  decltype(&cublasGetStatusString) status_string;
};

// Opens the library once (thread-safe: the build's toolkit file, else its
// soname through the loader's search) and resolves every entry point;
// throws std::runtime_error naming what it tried and the loader's reasons
// when it cannot (and tries again on the next call).
const CublasApi& cublas_api();

}  // namespace mstar::kernels::cuda_detail
