// The cpu backend's body for any x86-64 (or other) processor.
#include "cpu/bounded_attention_cpu.h"

#define MSTAR_CPU_ISA generic
#include "cpu/bounded_attention_cpu_impl.inc"
