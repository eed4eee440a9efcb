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

namespace {

// ggml's nearest_int: round to nearest, ties to even (|x| < 2^22).
int nearest_int(float x) { return static_cast<int>(std::nearbyint(x)); }

constexpr float kGroupMaxEps = 1e-15f;

// make_qkx2_quants: the scale and (returned in the_min, negated) offset of
// n values quantised to 0..nmax, minimising the weighted squared error over
// nstep + 1 candidate ranges; L the levels. A candidate that wins moves the
// min that later candidates' ranges start from, as in the reference.
float make_qkx2_quants(int n, int nmax, const float* x, const float* w, uint8_t* L, float& the_min, uint8_t* Laux,
                       float rmin, float rdelta, int nstep) {
  float min = x[0], max = x[0], sum_w = w[0], sum_x = sum_w * x[0];
  for (int i = 1; i < n; ++i) {
    if (x[i] < min) min = x[i];
    if (x[i] > max) max = x[i];
    sum_w += w[i];
    sum_x += w[i] * x[i];
  }
  if (min > 0) min = 0;
  if (max == min) {
    for (int i = 0; i < n; ++i) L[i] = 0;
    the_min = -min;
    return 0.0f;
  }
  float iscale = static_cast<float>(nmax) / (max - min), scale = 1 / iscale, best = 0;
  for (int i = 0; i < n; ++i) {
    const int l = nearest_int(iscale * (x[i] - min));
    L[i] = static_cast<uint8_t>(std::max(0, std::min(nmax, l)));
    const float diff = scale * static_cast<float>(L[i]) + min - x[i];
    best += w[i] * (diff * diff);
  }
  for (int is = 0; is <= nstep; ++is) {
    iscale = (rmin + rdelta * static_cast<float>(is) + static_cast<float>(nmax)) / (max - min);
    float sum_l = 0, sum_l2 = 0, sum_xl = 0;
    for (int i = 0; i < n; ++i) {
      const int l = std::max(0, std::min(nmax, nearest_int(iscale * (x[i] - min))));
      Laux[i] = static_cast<uint8_t>(l);
      const float wl = w[i] * static_cast<float>(l);
      sum_l += wl;
      sum_l2 += wl * static_cast<float>(l);
      sum_xl += wl * x[i];
    }
    const float D = sum_w * sum_l2 - sum_l * sum_l;
    if (D > 0) {
      float this_scale = (sum_w * sum_xl - sum_x * sum_l) / D;
      float this_min = (sum_l2 * sum_x - sum_l * sum_xl) / D;
      if (this_min > 0) {
        this_min = 0;
        this_scale = sum_xl / sum_l2;
      }
      float cur = 0;
      for (int i = 0; i < n; ++i) {
        const float diff = this_scale * static_cast<float>(Laux[i]) + this_min - x[i];
        cur += w[i] * (diff * diff);
      }
      if (cur < best) {
        for (int i = 0; i < n; ++i) L[i] = Laux[i];
        best = cur;
        scale = this_scale;
        min = this_min;
      }
    }
  }
  the_min = -min;
  return scale;
}

// make_qx_quants with weights x^2: the signed scale of n values quantised
// to -nmax..nmax-1 (L holds them plus nmax), over 19 candidate scales.
float make_qx_quants(int n, int nmax, const float* x, uint8_t* L) {
  float max = 0, amax = 0;
  for (int i = 0; i < n; ++i)
    if (std::fabs(x[i]) > amax) {
      amax = std::fabs(x[i]);
      max = x[i];
    }
  if (amax < kGroupMaxEps) {
    for (int i = 0; i < n; ++i) L[i] = 0;
    return 0.0f;
  }
  const auto level = [&](float iscale, int i) {
    return std::max(-nmax, std::min(nmax - 1, nearest_int(iscale * x[i])));
  };
  float iscale = static_cast<float>(-nmax) / max, sumlx = 0, suml2 = 0;
  for (int i = 0; i < n; ++i) {
    const int l = level(iscale, i);
    L[i] = static_cast<uint8_t>(l + nmax);
    const float w = x[i] * x[i];
    sumlx += w * x[i] * static_cast<float>(l);
    suml2 += w * static_cast<float>(l) * static_cast<float>(l);
  }
  float scale = suml2 != 0 ? sumlx / suml2 : 0.0f, best = scale * sumlx;
  for (int is = -9; is <= 9; ++is) {
    if (is == 0) continue;
    iscale = -(static_cast<float>(nmax) + 0.1f * static_cast<float>(is)) / max;
    sumlx = suml2 = 0;
    for (int i = 0; i < n; ++i) {
      const int l = level(iscale, i);
      const float w = x[i] * x[i];
      sumlx += w * x[i] * static_cast<float>(l);
      suml2 += w * static_cast<float>(l) * static_cast<float>(l);
    }
    if (suml2 > 0 && sumlx * sumlx > best * suml2) {
      for (int i = 0; i < n; ++i) L[i] = static_cast<uint8_t>(nmax + level(iscale, i));
      scale = sumlx / suml2;
      best = scale * sumlx;
    }
  }
  return scale;
}

// The shared half of Q4_K and Q5_K: each sub-block's scale and min, their
// 6-bit codes packed into `packed` (12 bytes), d and dmin, and L (256
// levels in 0..nmax) quantised again against the stored scales.
void k_scales_mins(const float* x, int nmax, float rmin, int nstep, unsigned char* b, uint8_t* L) {
  float scales[8], mins[8], weights[32];
  uint8_t Laux[32];
  float max_scale = 0, max_min = 0;
  for (int j = 0; j < 8; ++j) {
    float sum_x2 = 0;
    for (int l = 0; l < 32; ++l) sum_x2 += x[32 * j + l] * x[32 * j + l];
    const float av_x = std::sqrt(sum_x2 / 32);
    for (int l = 0; l < 32; ++l) weights[l] = av_x + std::fabs(x[32 * j + l]);
    scales[j] = make_qkx2_quants(32, nmax, x + 32 * j, weights, L + 32 * j, mins[j], Laux, rmin, 0.1f, nstep);
    if (scales[j] > max_scale) max_scale = scales[j];
    if (mins[j] > max_min) max_min = mins[j];
  }
  const float inv_scale = max_scale > 0 ? 63.0f / max_scale : 0.0f, inv_min = max_min > 0 ? 63.0f / max_min : 0.0f;
  unsigned char* packed = b + 4;
  std::memset(packed, 0, 12);
  for (int j = 0; j < 8; ++j) {
    // As the reference: the int to uint8_t conversion, then the cap.
    const auto ls = std::min<uint8_t>(63, static_cast<uint8_t>(nearest_int(inv_scale * scales[j])));
    const auto lm = std::min<uint8_t>(63, static_cast<uint8_t>(nearest_int(inv_min * mins[j])));
    if (j < 4) {
      packed[j] = ls;
      packed[j + 4] = lm;
    } else {
      packed[j + 4] = static_cast<unsigned char>((ls & 0xF) | ((lm & 0xF) << 4));
      packed[j - 4] |= static_cast<unsigned char>((ls >> 4) << 6);
      packed[j] |= static_cast<unsigned char>((lm >> 4) << 6);
    }
  }
  put_half(b, max_scale / 63.0f);
  put_half(b + 2, max_min / 63.0f);
  const float d = half_at(b), dmin = half_at(b + 2);
  for (int j = 0; j < 8; ++j) {
    float sc, m;
    scale_min_k4(j, packed, sc, m);
    const float dj = d * sc;
    if (dj == 0) continue;
    const float dm = dmin * m;
    for (int i = 0; i < 32; ++i)
      L[32 * j + i] = static_cast<uint8_t>(std::max(0, std::min(nmax, nearest_int((x[32 * j + i] + dm) / dj))));
  }
}

}  // namespace

void q4_k_from_f32(const float* src, void* dst, int64_t n) {
  auto* b = static_cast<unsigned char*>(dst);
  uint8_t L[kQKBlock];
  for (int64_t at = 0; at < n; at += kQKBlock, b += kQ4_KBytes) {
    k_scales_mins(src + at, 15, -1.0f, 20, b, L);
    unsigned char* q = b + 16;
    for (int j = 0; j < kQKBlock; j += 64, q += 32)
      for (int l = 0; l < 32; ++l) q[l] = static_cast<unsigned char>(L[j + l] | (L[j + l + 32] << 4));
  }
}

void q5_k_from_f32(const float* src, void* dst, int64_t n) {
  auto* b = static_cast<unsigned char*>(dst);
  uint8_t L[kQKBlock];
  for (int64_t at = 0; at < n; at += kQKBlock, b += kQ5_KBytes) {
    k_scales_mins(src + at, 31, -0.5f, 15, b, L);
    unsigned char* qh = b + 16;
    unsigned char* ql = b + 48;
    std::memset(qh, 0, 32);
    unsigned m1 = 1, m2 = 2;
    for (int j = 0; j < kQKBlock; j += 64, ql += 32, m1 <<= 2, m2 <<= 2)
      for (int l = 0; l < 32; ++l) {
        int l1 = L[j + l], l2 = L[j + l + 32];
        if (l1 > 15) {
          l1 -= 16;
          qh[l] = static_cast<unsigned char>(qh[l] | m1);
        }
        if (l2 > 15) {
          l2 -= 16;
          qh[l] = static_cast<unsigned char>(qh[l] | m2);
        }
        ql[l] = static_cast<unsigned char>(l1 | (l2 << 4));
      }
  }
}

void q6_k_from_f32(const float* src, void* dst, int64_t n) {
  auto* b = static_cast<unsigned char*>(dst);
  uint8_t L[kQKBlock];
  float scales[16];
  for (int64_t at = 0; at < n; at += kQKBlock, b += kQ6_KBytes) {
    const float* x = src + at;
    float max_scale = 0, max_abs_scale = 0;
    for (int ib = 0; ib < 16; ++ib) {
      scales[ib] = make_qx_quants(16, 32, x + 16 * ib, L + 16 * ib);
      if (std::fabs(scales[ib]) > max_abs_scale) {
        max_abs_scale = std::fabs(scales[ib]);
        max_scale = scales[ib];
      }
    }
    std::memset(b, 0, kQ6_KBytes);
    if (max_abs_scale < kGroupMaxEps) continue;  // every byte 0, d 0 too
    const float iscale = -128.0f / max_scale;
    put_half(b + 208, 1 / iscale);
    auto* sc = reinterpret_cast<int8_t*>(b + 192);
    for (int ib = 0; ib < 16; ++ib) sc[ib] = static_cast<int8_t>(std::min(127, nearest_int(iscale * scales[ib])));
    const float d16 = half_at(b + 208);
    for (int j = 0; j < 16; ++j) {
      const float d = d16 * static_cast<float>(sc[j]);
      if (d == 0) continue;
      for (int i = 0; i < 16; ++i)
        L[16 * j + i] = static_cast<uint8_t>(std::max(-32, std::min(31, nearest_int(x[16 * j + i] / d))) + 32);
    }
    unsigned char* ql = b;
    unsigned char* qh = b + 128;
    for (int j = 0; j < kQKBlock; j += 128, ql += 64, qh += 32)
      for (int l = 0; l < 32; ++l) {
        ql[l] = static_cast<unsigned char>((L[j + l] & 0xF) | ((L[j + l + 64] & 0xF) << 4));
        ql[l + 32] = static_cast<unsigned char>((L[j + l + 32] & 0xF) | ((L[j + l + 96] & 0xF) << 4));
        qh[l] = static_cast<unsigned char>((L[j + l] >> 4) | ((L[j + l + 32] >> 4) << 2) | ((L[j + l + 64] >> 4) << 4) |
                                           ((L[j + l + 96] >> 4) << 6));
      }
  }
}

}  // namespace mstar
