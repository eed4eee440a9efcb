#include "cpu/isa.h"

#include <initializer_list>

namespace mstar::kernels {

bool cpu_supports(CpuIsa isa) {
#if defined(__x86_64__)
  __builtin_cpu_init();
  const bool avx2 =
      __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma") && __builtin_cpu_supports("f16c");
  const bool avx512 = avx2 && __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
                      __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("avx512dq");
  switch (isa) {
    case CpuIsa::generic: return true;
    case CpuIsa::avx2: return avx2;
    case CpuIsa::avx512: return avx512;
    case CpuIsa::avx512_bf16: return avx512 && __builtin_cpu_supports("avx512bf16");
  }
  return false;
#else
  return isa == CpuIsa::generic;
#endif
}

CpuIsa best_cpu_isa() {
  static const CpuIsa best = [] {
    for (CpuIsa isa : {CpuIsa::avx512_bf16, CpuIsa::avx512, CpuIsa::avx2})
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
  }
  return "?";
}

}  // namespace mstar::kernels
