// The cpu backend's bodies (matrix product, elementwise, attention, the
// arithmetic peak loop) for any processor.
#include "core/dtype.h"
#include "core/errors.h"
#include "cpu/attention_cpu.h"
#include "cpu/elementwise_cpu.h"
#include "cpu/matmul_cpu.h"
#include "cpu/peak_cpu.h"

#define MSTAR_CPU_ISA generic
#include "cpu/vec.inc"
#include "cpu/matmul_cpu_impl.inc"
#include "cpu/elementwise_cpu_impl.inc"
#include "cpu/peak_cpu_impl.inc"
#include "cpu/attention_cpu_impl.inc"
