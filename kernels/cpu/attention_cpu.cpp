// What the cpu backend's dispatchers share: the choice of instruction set and
// the per-thread scratch.
#include "cpu/attention_cpu.h"

namespace mstar::kernels {

bool cpu_supports(CpuIsa isa) {
  if (isa == CpuIsa::generic) return true;
#if defined(__x86_64__)
  __builtin_cpu_init();
  return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma") && __builtin_cpu_supports("f16c");
#else
  return false;
#endif
}

CpuIsa best_cpu_isa() {
  static const CpuIsa best = cpu_supports(CpuIsa::avx2) ? CpuIsa::avx2 : CpuIsa::generic;
  return best;
}

CpuScratchBuffer::CpuScratchBuffer(int32_t max_qn, int32_t D)
    : f_(static_cast<size_t>(2 * max_qn * D + 2 * max_qn + 2 * kCpuChunk * D + kScoreRows * kCpuChunk)),
      i_(static_cast<size_t>(max_qn)) {
  float* b = f_.data();
  s_.qblock = b;
  s_.acc = b + max_qn * D;
  s_.m = s_.acc + max_qn * D;
  s_.l = s_.m + max_qn;
  s_.kbuf = s_.l + max_qn;
  s_.vbuf = s_.kbuf + kCpuChunk * D;
  s_.scores = s_.vbuf + kCpuChunk * D;
  s_.visible = i_.data();
}

}  // namespace mstar::kernels
