// The cpu backend's bodies (matrix product, elementwise, attention, the
// arithmetic peak loop) for processors with AVX2, FMA and F16C, chosen at run
// time (cpu_supports in isa.cpp): 8 f32 lanes, 16 registers.
#include "core/dtype.h"
#include "core/errors.h"
#include "kernels/cpu/attention_cpu.h"
#include "kernels/cpu/elementwise_cpu.h"
#include "kernels/cpu/matmul_cpu.h"
#include "kernels/cpu/peak_cpu.h"

#if defined(__x86_64__)
#include <immintrin.h>
#pragma GCC push_options
#pragma GCC target("avx2,fma,f16c")
// clang takes no `#pragma GCC target`; its own scoped attribute does the same
// (the fuzz preset builds with clang 14).
#if defined(__clang__)
#pragma clang attribute push(__attribute__((target("avx2,fma,f16c"))), apply_to = function)
#endif
#define MSTAR_CPU_AVX2 1
#define MSTAR_CPU_ISA avx2
#include "kernels/cpu/vec.inc"
#include "kernels/cpu/matmul_cpu_impl.inc"
#include "kernels/cpu/elementwise_cpu_impl.inc"
#include "kernels/cpu/peak_cpu_impl.inc"
#include "kernels/cpu/attention_cpu_impl.inc"
#if defined(__clang__)
#pragma clang attribute pop
#endif
#pragma GCC pop_options
#endif  // off x86-64 nothing here: the dispatchers never name these bodies there
