#pragma once
// Internal to the cpu backend: the per-ISA unit bodies and their scratch.
#include "bounded_attention.h"

namespace mstar::kernels {

// Per-thread scratch for one unit (a row's KV head with its query group),
// owned by the dispatcher so the ISA-specific files allocate nothing.
struct CpuScratch {
  float* qblock;   // [q_len * group, D] queries, pre-scaled
  float* acc;      // [q_len * group, D]
  float* m;        // [q_len * group] running max
  float* l;        // [q_len * group] running denominator
  float* kbuf;     // [chunk, D]
  float* vbuf;     // [chunk, D]
  float* scores;   // [chunk]
  int32_t* visible;  // [q_len * group]
};

constexpr int32_t kCpuChunk = 64;

// Instruction sets the cpu backend has bodies for. The backend picks the best
// one this processor supports; tests name one to cover every body.
enum class CpuIsa : unsigned char { generic, avx2 };
bool cpu_supports(CpuIsa isa);
void bounded_attention_cpu_isa(const BoundedAttentionParams& p, CpuIsa isa);

namespace generic {
void attend_unit(const BoundedAttentionParams& p, int32_t r, int32_t h, const CpuScratch& s);
}
namespace avx2 {
void attend_unit(const BoundedAttentionParams& p, int32_t r, int32_t h, const CpuScratch& s);
}

}  // namespace mstar::kernels
