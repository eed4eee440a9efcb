// The cpu backend's bodies (matrix product, elementwise, attention, the
// arithmetic peak loop) for any processor.
#include "core/dtype.h"
#include "core/errors.h"
#include "kernels/cpu/attention_cpu.h"
#include "kernels/cpu/elementwise_cpu.h"
#include "kernels/cpu/matmul_cpu.h"
#include "kernels/cpu/peak_cpu.h"

#define MSTAR_CPU_ISA generic
#include "kernels/cpu/vec.inc"
#include "kernels/cpu/matmul_cpu_impl.inc"
#include "kernels/cpu/elementwise_cpu_impl.inc"
#include "kernels/cpu/peak_cpu_impl.inc"
#include "kernels/cpu/attention_cpu_impl.inc"
