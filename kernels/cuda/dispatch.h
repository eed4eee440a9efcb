#pragma once
// How the device-neutral dispatchers reach the CUDA backend: in a build with
// it, a call into kernels/cuda; without it, the case falls through to the
// "not built into this binary" error.
#include "cuda/cuda_ops.h"

#ifdef MSTAR_WITH_CUDA
#define MSTAR_CUDA_DISPATCH(call) return call
#else
#define MSTAR_CUDA_DISPATCH(call) break
#endif
