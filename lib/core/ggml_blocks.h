#pragma once
// ggml's block-quantised weight formats, as GGUF files store them: each a
// row of the dtype traits (dtype.h) whose to_f32 is the format's
// dequantisation, evaluated in f32 in the order ggml's reference
// dequantisers use, so a block reads back bit-identical to theirs
// (docs/gguf.md, "Block formats"). Every format quantises along a row, in
// blocks of 32 or 256 consecutive elements; d and dmin are IEEE binary16.
//
//   Q8_0  34 B / 32:  d, int8 q[32]                        x = d * q
//   Q4_0  18 B / 32:  d, q[16] nibbles: element j low, j + 16 high
//                                                          x = d * (q - 8)
//   Q4_K 144 B / 256: d, dmin, 12 B of 6-bit scale and min for each of
//                     8 sub-blocks of 32, q[128] nibbles   x = d*sc * q - dmin*m
//   Q5_K 176 B / 256: as Q4_K, plus qh[32]: the fifth bit  x = d*sc * q - dmin*m
//   Q6_K 210 B / 256: ql[128] low nibbles, qh[64] high 2 bits, int8
//                     scales[16] for sub-blocks of 16, d   x = d * sc * (q - 32)
#include <cstdint>

namespace mstar {

// Sizes of one block, in elements and bytes.
inline constexpr int64_t kQ8_0Block = 32, kQ8_0Bytes = 34;
inline constexpr int64_t kQ4_0Block = 32, kQ4_0Bytes = 18;
inline constexpr int64_t kQKBlock = 256;
inline constexpr int64_t kQ4_KBytes = 144, kQ5_KBytes = 176, kQ6_KBytes = 210;

// n elements (a multiple of the block) of each format to f32.
void q8_0_to_f32(const void* src, float* dst, int64_t n);
void q4_0_to_f32(const void* src, float* dst, int64_t n);
void q4_k_to_f32(const void* src, float* dst, int64_t n);
void q5_k_to_f32(const void* src, float* dst, int64_t n);
void q6_k_to_f32(const void* src, float* dst, int64_t n);

// n f32 values (a multiple of 32) into Q8_0 and Q4_0 blocks, as ggml's
// reference quantisers round them (quantize_row_q8_0_ref, q4_0_ref): Q8_0 d = max|x| / 127, q = round(x / d)
// half away from zero; Q4_0 d = -m / 8 for m the element of largest
// magnitude, q = min(15, trunc(x / d + 8.5)).
void q8_0_from_f32(const float* src, void* dst, int64_t n);
void q4_0_from_f32(const float* src, void* dst, int64_t n);

// n f32 values (a multiple of 256) into K blocks by ggml's reference
// quantisers (quantize_row_q{4,5,6}_K_ref), whose every float operation and
// order they keep, so the blocks are the reference's byte for byte
// (docs/gguf.md, "Quantising"): Q4_K and Q5_K search each sub-block's scale
// and min by weighted least squares over 21 and 16 candidate ranges
// (weights sqrt(mean x^2) + |x|), then quantise the scales to 6 bits and
// every value again against them; Q6_K searches each sub-block's signed
// scale over 19 candidates (weights x^2), then the scales to int8.
void q4_k_from_f32(const float* src, void* dst, int64_t n);
void q5_k_from_f32(const float* src, void* dst, int64_t n);
void q6_k_from_f32(const float* src, void* dst, int64_t n);

}  // namespace mstar
