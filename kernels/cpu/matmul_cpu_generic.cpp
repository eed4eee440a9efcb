// The matrix product's panels for any processor.
#include "core/dtype.h"
#include "cpu/matmul_cpu.h"

#define MSTAR_CPU_ISA generic
#include "cpu/matmul_cpu_impl.inc"
