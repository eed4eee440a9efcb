#include "core/ggml_blocks.h"

#include <algorithm>
#include <cmath>
#include <cstring>

#include "core/dtype.h"

namespace mstar {

namespace {

float half_at(const unsigned char* p) {
  uint16_t h;
  std::memcpy(&h, p, 2);
  return f16_to_f32(h);
}

void put_half(unsigned char* p, float x) {
  const uint16_t h = f32_to_f16(x);
  std::memcpy(p, &h, 2);
}

// Sub-block j's 6-bit scale and min from the 12 packed bytes of a Q4_K or
// Q5_K block: j < 4 in the low 6 bits of bytes j and j + 4; j >= 4 in the
// nibbles of byte j + 4, topped by the high 2 bits of bytes j - 4 and j.
void scale_min_k4(int j, const unsigned char* q, float& sc, float& m) {
  if (j < 4) {
    sc = static_cast<float>(q[j] & 63);
    m = static_cast<float>(q[j + 4] & 63);
  } else {
    sc = static_cast<float>((q[j + 4] & 0xF) | ((q[j - 4] >> 6) << 4));
    m = static_cast<float>((q[j + 4] >> 4) | ((q[j] >> 6) << 4));
  }
}

}  // namespace

void q8_0_to_f32(const void* src, float* dst, int64_t n) {
  const auto* b = static_cast<const unsigned char*>(src);
  for (int64_t at = 0; at < n; at += kQ8_0Block, b += kQ8_0Bytes) {
    const float d = half_at(b);
    for (int64_t i = 0; i < kQ8_0Block; ++i) dst[at + i] = static_cast<float>(static_cast<int8_t>(b[2 + i])) * d;
  }
}

void q4_0_to_f32(const void* src, float* dst, int64_t n) {
  const auto* b = static_cast<const unsigned char*>(src);
  for (int64_t at = 0; at < n; at += kQ4_0Block, b += kQ4_0Bytes) {
    const float d = half_at(b);
    for (int64_t i = 0; i < 16; ++i) {
      dst[at + i] = static_cast<float>((b[2 + i] & 0xF) - 8) * d;
      dst[at + i + 16] = static_cast<float>((b[2 + i] >> 4) - 8) * d;
    }
  }
}

void q4_k_to_f32(const void* src, float* dst, int64_t n) {
  const auto* b = static_cast<const unsigned char*>(src);
  for (int64_t at = 0; at < n; at += kQKBlock, b += kQ4_KBytes) {
    const float d = half_at(b), dmin = half_at(b + 2);
    const unsigned char* scales = b + 4;
    const unsigned char* q = b + 16;
    float* y = dst + at;
    for (int j = 0; j < 8; j += 2, q += 32, y += 64) {
      float sc, m;
      scale_min_k4(j, scales, sc, m);
      const float d1 = d * sc, m1 = dmin * m;
      scale_min_k4(j + 1, scales, sc, m);
      const float d2 = d * sc, m2 = dmin * m;
      for (int l = 0; l < 32; ++l) y[l] = d1 * static_cast<float>(q[l] & 0xF) - m1;
      for (int l = 0; l < 32; ++l) y[32 + l] = d2 * static_cast<float>(q[l] >> 4) - m2;
    }
  }
}

void q5_k_to_f32(const void* src, float* dst, int64_t n) {
  const auto* b = static_cast<const unsigned char*>(src);
  for (int64_t at = 0; at < n; at += kQKBlock, b += kQ5_KBytes) {
    const float d = half_at(b), dmin = half_at(b + 2);
    const unsigned char* scales = b + 4;
    const unsigned char* qh = b + 16;
    const unsigned char* ql = b + 48;
    float* y = dst + at;
    unsigned u1 = 1, u2 = 2;  // the fifth bits of this pair of sub-blocks in qh
    for (int j = 0; j < 8; j += 2, ql += 32, y += 64, u1 <<= 2, u2 <<= 2) {
      float sc, m;
      scale_min_k4(j, scales, sc, m);
      const float d1 = d * sc, m1 = dmin * m;
      scale_min_k4(j + 1, scales, sc, m);
      const float d2 = d * sc, m2 = dmin * m;
      for (int l = 0; l < 32; ++l) y[l] = d1 * static_cast<float>((ql[l] & 0xF) + (qh[l] & u1 ? 16 : 0)) - m1;
      for (int l = 0; l < 32; ++l) y[32 + l] = d2 * static_cast<float>((ql[l] >> 4) + (qh[l] & u2 ? 16 : 0)) - m2;
    }
  }
}

void q6_k_to_f32(const void* src, float* dst, int64_t n) {
  const auto* b = static_cast<const unsigned char*>(src);
  for (int64_t at = 0; at < n; at += kQKBlock, b += kQ6_KBytes) {
    const unsigned char* ql = b;
    const unsigned char* qh = b + 128;
    const auto* sc = reinterpret_cast<const int8_t*>(b + 192);
    const float d = half_at(b + 208);
    float* y = dst + at;
    for (int half = 0; half < 2; ++half, ql += 64, qh += 32, sc += 8, y += 128) {
      for (int l = 0; l < 32; ++l) {
        const int is = l / 16;
        const int q1 = ((ql[l] & 0xF) | (((qh[l] >> 0) & 3) << 4)) - 32;
        const int q2 = ((ql[l + 32] & 0xF) | (((qh[l] >> 2) & 3) << 4)) - 32;
        const int q3 = ((ql[l] >> 4) | (((qh[l] >> 4) & 3) << 4)) - 32;
        const int q4 = ((ql[l + 32] >> 4) | (((qh[l] >> 6) & 3) << 4)) - 32;
        y[l] = d * static_cast<float>(sc[is]) * static_cast<float>(q1);
        y[l + 32] = d * static_cast<float>(sc[is + 2]) * static_cast<float>(q2);
        y[l + 64] = d * static_cast<float>(sc[is + 4]) * static_cast<float>(q3);
        y[l + 96] = d * static_cast<float>(sc[is + 6]) * static_cast<float>(q4);
      }
    }
  }
}

void q8_0_from_f32(const float* src, void* dst, int64_t n) {
  auto* b = static_cast<unsigned char*>(dst);
  for (int64_t at = 0; at < n; at += kQ8_0Block, b += kQ8_0Bytes) {
    float amax = 0.0f;
    for (int64_t i = 0; i < kQ8_0Block; ++i) amax = std::max(amax, std::fabs(src[at + i]));
    const float d = amax / 127.0f, id = d != 0.0f ? 1.0f / d : 0.0f;
    put_half(b, d);
    for (int64_t i = 0; i < kQ8_0Block; ++i)
      b[2 + i] = static_cast<unsigned char>(static_cast<int8_t>(std::round(src[at + i] * id)));
  }
}

void q4_0_from_f32(const float* src, void* dst, int64_t n) {
  auto* b = static_cast<unsigned char*>(dst);
  for (int64_t at = 0; at < n; at += kQ4_0Block, b += kQ4_0Bytes) {
    float amax = 0.0f, max = 0.0f;  // the element of largest magnitude, with its sign
    for (int64_t i = 0; i < kQ4_0Block; ++i)
      if (std::fabs(src[at + i]) > amax) {
        amax = std::fabs(src[at + i]);
        max = src[at + i];
      }
    const float d = max / -8.0f, id = d != 0.0f ? 1.0f / d : 0.0f;
    put_half(b, d);
    for (int64_t i = 0; i < 16; ++i) {
      const auto lo = static_cast<unsigned char>(std::min(15, static_cast<int>(src[at + i] * id + 8.5f)));
      const auto hi = static_cast<unsigned char>(std::min(15, static_cast<int>(src[at + i + 16] * id + 8.5f)));
      b[2 + i] = static_cast<unsigned char>(lo | (hi << 4));
    }
  }
}

}  // namespace mstar
