#pragma once
// The instruction sets the cpu backend has bodies for, chosen at run time:
// every body is compiled whatever the build machine is (each in its own file
// under `#pragma GCC target`), and the backend uses the best one this
// processor supports. Tests name one to cover every body the processor runs.
namespace mstar::kernels {

enum class CpuIsa : unsigned char {
  generic,     // any processor: plain loops the compiler vectorises for the baseline
  avx2,        // AVX2 + FMA + F16C
  avx512,      // AVX-512 F, BW, VL, DQ (with the AVX2 set)
  avx512_bf16,  // the above + AVX512_BF16 (vdpbf16ps, vcvtne2ps2bf16)
  amx_bf16      // the above + AMX-TILE and AMX-BF16 (tdpbf16ps), once Linux lets the process use the tiles
};

inline constexpr CpuIsa kCpuIsas[] = {CpuIsa::generic, CpuIsa::avx2, CpuIsa::avx512, CpuIsa::avx512_bf16,
                                      CpuIsa::amx_bf16};

// Sets that run the AVX-512 bodies, and those with the bf16 pair dot product.
inline bool has_avx512(CpuIsa isa) { return isa >= CpuIsa::avx512; }
inline bool has_bf16_pairs(CpuIsa isa) { return isa >= CpuIsa::avx512_bf16; }

bool cpu_supports(CpuIsa isa);
CpuIsa best_cpu_isa();
const char* cpu_isa_name(CpuIsa isa);  // "generic", "avx2", "avx512", "avx512_bf16", "amx_bf16"

}  // namespace mstar::kernels
