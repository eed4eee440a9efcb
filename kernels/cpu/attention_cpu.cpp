// What the cpu backend's attention dispatchers share: the body per
// instruction set and the per-thread scratch.
#include "kernels/cpu/attention_cpu.h"

namespace mstar::kernels {

CpuUnits cpu_units(CpuIsa isa) {
  switch (isa) {
#if defined(__x86_64__)
    case CpuIsa::avx2: return {&avx2::bounded_unit, &avx2::ring_unit};
    case CpuIsa::avx512:
    case CpuIsa::avx512_bf16:
    case CpuIsa::amx_bf16: return {&avx512::bounded_unit, &avx512::ring_unit};  // see ops_cpu_avx512.cpp
#endif
    default: return {&generic::bounded_unit, &generic::ring_unit};  // off x86-64, cpu_supports allows only this
  }
}

const CpuScratch& thread_scratch(int32_t max_qn, int32_t D) {
  thread_local std::vector<float> f;
  thread_local std::vector<int32_t> v;
  thread_local CpuScratch s{};
  thread_local int32_t have_qn = -1, have_d = -1;
  if (max_qn != have_qn || D != have_d) {
    f.assign(static_cast<size_t>(2 * max_qn * D + 2 * max_qn + 2 * kCpuChunk * D + kScoreRows * kCpuChunk), 0.0f);
    v.assign(static_cast<size_t>(max_qn), 0);
    float* b = f.data();
    s.qblock = b;
    s.acc = b + max_qn * D;
    s.m = s.acc + max_qn * D;
    s.l = s.m + max_qn;
    s.kbuf = s.l + max_qn;
    s.vbuf = s.kbuf + kCpuChunk * D;
    s.scores = s.vbuf + kCpuChunk * D;
    s.visible = v.data();
    have_qn = max_qn, have_d = D;
  }
  return s;
}

}  // namespace mstar::kernels
