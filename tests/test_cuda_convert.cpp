// The CUDA backend rounds f32 to f16 and bf16 with kernels/cuda/convert.h
// (integer arithmetic, the same code on the device); here it is checked
// against core/dtype.h's rounding on the host, so a cache stored on a GPU is
// known to hold the host's bytes without a GPU in sight. Every exponent and
// sign with the mantissa patterns around each rounding boundary, NaNs and
// infinities, and a million random patterns. (All 2^32 inputs were also
// checked once, by hand: it takes minutes, too long for the suite.)
#include <doctest/doctest.h>

#include <cstring>
#include <random>

#include "core/dtype.h"
#include "kernels/cuda/convert.h"

using namespace mstar;

namespace {

float from_bits(uint32_t u) {
  float x;
  std::memcpy(&x, &u, sizeof x);
  return x;
}

int64_t mismatches(uint32_t u) {
  const float x = from_bits(u);
  int64_t bad = 0;
  bad += kernels::convert::f32_to_f16_bits(x) != f32_to_f16(x);
  bad += kernels::convert::f32_to_bf16_bits(x) != f32_to_bf16(x);
  return bad;
}

}  // namespace

TEST_CASE("cuda convert: f32 to f16 and bf16 bit for bit as core/dtype.h rounds") {
  // Low 16 bits around bf16's rounding point (0x8000), f16's (0x1000 in
  // normal range) and the subnormal halves' (any bit up to 24), all signs
  // and exponents through the high 16 bits.
  const uint32_t lows[] = {0x0000, 0x0001, 0x0fff, 0x1000, 0x1001, 0x1fff, 0x2000, 0x3000, 0x7fff,
                           0x8000, 0x8001, 0x9000, 0xbfff, 0xc000, 0xefff, 0xf000, 0xffff};
  int64_t bad = 0;
  for (uint32_t hi = 0; hi < 0x10000u; ++hi)
    for (uint32_t lo : lows) bad += mismatches(hi << 16 | lo);
  CHECK(bad == 0);

  // Around f16's limits: the largest half (65504), the overflow tie (65520),
  // the smallest normal (2^-14) and subnormal (2^-24), the zero tie (2^-25).
  bad = 0;
  for (uint32_t centre : {0x477fe000u, 0x477ff000u, 0x38800000u, 0x33800000u, 0x33000000u})
    for (uint32_t d = 0; d < 0x4000u; ++d) bad += mismatches(centre - 0x2000u + d) + mismatches((centre - 0x2000u + d) | 0x80000000u);
  CHECK(bad == 0);

  // Infinities and NaNs (quiet and signalling, with payloads).
  for (uint32_t u : {0x7f800000u, 0xff800000u, 0x7fc00000u, 0xffc00000u, 0x7f800001u, 0x7fa00000u, 0x7fbfffffu,
                     0xff812345u, 0x7fffffffu})
    CHECK(mismatches(u) == 0);

  std::mt19937 gen(42);
  bad = 0;
  for (int i = 0; i < 1000000; ++i) bad += mismatches(static_cast<uint32_t>(gen()));
  CHECK(bad == 0);
}
