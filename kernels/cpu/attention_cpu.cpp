// The per-thread scratch the cpu backend's attention dispatchers share.
#include "cpu/attention_cpu.h"

namespace mstar::kernels {

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
