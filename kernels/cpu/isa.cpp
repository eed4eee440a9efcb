#include "kernels/cpu/isa.h"

#include <initializer_list>

#if defined(__x86_64__)
#include <cpuid.h>
#include <sys/syscall.h>
#include <unistd.h>
#endif

namespace mstar::kernels {

#if defined(__x86_64__)
namespace {

// F16C from CPUID leaf 1 (ECX bit 29): clang 14, the fuzz preset's compiler,
// does not take "f16c" as a __builtin_cpu_supports feature.
bool has_f16c() {
  unsigned a = 0, b = 0, c = 0, d = 0;
  return __get_cpuid(1, &a, &b, &c, &d) && (c & bit_F16C) != 0;
}

// AMX-TILE and AMX-BF16 from CPUID leaf 7 (EDX bits 24 and 22), and the
// kernel's leave to use the tile data: Linux hands each process the 8 KiB of
// tile state only on request (arch_prctl ARCH_REQ_XCOMP_PERM), and the first
// tile instruction of a process that did not ask dies with SIGILL. Granted
// per process, so asking once covers every thread of the pool.
bool has_amx_bf16() {
  unsigned a = 0, b = 0, c = 0, d = 0;
  if (!__get_cpuid_count(7, 0, &a, &b, &c, &d) || (d & (1u << 24)) == 0 || (d & (1u << 22)) == 0) return false;
  constexpr long kReqXcompPerm = 0x1023, kXfeatureXtiledata = 18;  // arch/x86/include/uapi/asm/prctl.h
  return syscall(SYS_arch_prctl, kReqXcompPerm, kXfeatureXtiledata) == 0;
}

}  // namespace
#endif

namespace {

bool detect(CpuIsa isa) {
#if defined(__x86_64__)
  __builtin_cpu_init();
  const bool avx2 =
      __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma") && has_f16c();
  const bool avx512 = avx2 && __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
                      __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("avx512dq");
  switch (isa) {
    case CpuIsa::generic: return true;
    case CpuIsa::avx2: return avx2;
    case CpuIsa::avx512: return avx512;
    case CpuIsa::avx512_bf16: return avx512 && __builtin_cpu_supports("avx512bf16");
    case CpuIsa::amx_bf16: return avx512 && __builtin_cpu_supports("avx512bf16") && has_amx_bf16();
  }
  return false;
#else
  return isa == CpuIsa::generic;
#endif
}

}  // namespace

// Detected once: CPUID traps to the hypervisor in a virtual machine, and the
// kernels' entry asserts ask on every call. Asked per call, it was 3.8% of a
// one-thread Qwen2.5-0.5B decode step (perf, this project's 2-core VM).
bool cpu_supports(CpuIsa isa) {
  static const bool supported[] = {detect(CpuIsa::generic), detect(CpuIsa::avx2), detect(CpuIsa::avx512),
                                   detect(CpuIsa::avx512_bf16), detect(CpuIsa::amx_bf16)};
  return supported[static_cast<unsigned>(isa)];
}

CpuIsa best_cpu_isa() {
  static const CpuIsa best = [] {
    for (CpuIsa isa : {CpuIsa::amx_bf16, CpuIsa::avx512_bf16, CpuIsa::avx512, CpuIsa::avx2})
      if (cpu_supports(isa)) return isa;
    return CpuIsa::generic;
  }();
  return best;
}

const char* cpu_isa_name(CpuIsa isa) {
  switch (isa) {
    case CpuIsa::generic: return "generic";
    case CpuIsa::avx2: return "avx2";
    case CpuIsa::avx512: return "avx512";
    case CpuIsa::avx512_bf16: return "avx512_bf16";
    case CpuIsa::amx_bf16: return "amx_bf16";
  }
  return "?";
}

}  // namespace mstar::kernels
