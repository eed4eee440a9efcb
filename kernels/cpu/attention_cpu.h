#pragma once
// Internal to the cpu backend: the per-ISA unit bodies and their scratch.
#include <vector>

#include "kernels/bounded_kv.h"
#include "kernels/cpu/isa.h"
#include "kernels/ring_kv.h"
#include "kernels/rope.h"

namespace mstar::kernels {

// Per-thread scratch for one unit (one row's KV head with its whole query
// group), owned by the dispatchers so the ISA-specific files allocate nothing.
struct CpuScratch {
  float* qblock;     // [qn, D] queries, pre-scaled
  float* acc;        // [qn, D]
  float* m;          // [qn] running max
  float* l;          // [qn] running denominator
  float* kbuf;       // [chunk, D]
  float* vbuf;       // [chunk, D]
  float* scores;     // [kScoreRows, chunk]: scores of a block of query rows
  int32_t* visible;  // [qn]
};

constexpr int32_t kCpuChunk = 64;
constexpr int32_t kScoreRows = 4;  // query rows that share each key load in the vector bodies

// This thread's scratch for queries of up to max_qn rows of head_dim D,
// kept between calls (a decode step would otherwise allocate per call).
const CpuScratch& thread_scratch(int32_t max_qn, int32_t D);

// The attention ops with a named instruction set (the backend passes
// best_cpu_isa(); tests name each one the processor supports).
void bounded_attention_cpu_isa(const BoundedAttentionParams& p, CpuIsa isa);
void ring_attention_cpu_isa(const RingAttentionParams& p, CpuIsa isa);

// One body's units: one (row, KV head) each.
struct CpuUnits {
  void (*bounded)(const BoundedAttentionParams& p, int32_t r, int32_t h, const CpuScratch& s);
  void (*ring)(const RingAttentionParams& p, int32_t r, int32_t h, const CpuScratch& s);
};

// Each body's definitions (ops_cpu_<isa>.cpp; only generic off x86-64).
#define MSTAR_CPU_UNITS                                                                         \
  void bounded_unit(const BoundedAttentionParams& p, int32_t r, int32_t h, const CpuScratch& s); \
  void ring_unit(const RingAttentionParams& p, int32_t r, int32_t h, const CpuScratch& s);
namespace generic {
MSTAR_CPU_UNITS
}
namespace avx2 {
MSTAR_CPU_UNITS
}
namespace avx512 {
MSTAR_CPU_UNITS
}
#undef MSTAR_CPU_UNITS

// The body for an instruction set the processor supports (the dispatchers
// check that first).
CpuUnits cpu_units(CpuIsa isa);

}  // namespace mstar::kernels
