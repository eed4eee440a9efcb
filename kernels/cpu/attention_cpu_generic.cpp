// The cpu backend's bodies for any processor.
#include "cpu/attention_cpu.h"

#define MSTAR_CPU_ISA generic
#include "cpu/attention_cpu_impl.inc"
