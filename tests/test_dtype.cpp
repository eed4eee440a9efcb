#include <cmath>
#include <limits>

#include <doctest/doctest.h>

#include "core/buffer.h"
#include "core/dtype.h"
#include "core/errors.h"

using namespace mstar;

TEST_CASE("f16 round trip: exact values survive, others round to nearest") {
  for (float x : {0.0f, 1.0f, -2.5f, 65504.0f, 0.000060975552f}) CHECK(f16_to_f32(f32_to_f16(x)) == x);
  CHECK(f16_to_f32(f32_to_f16(1.0f + 1.0f / 4096)) == 1.0f);  // below half an ulp (2^-10)
  CHECK(f16_to_f32(f32_to_f16(1.0f + 3.0f / 2048)) == 1.0f + 2.0f / 1024);
  CHECK(std::isinf(f16_to_f32(f32_to_f16(1e6f))));
  CHECK(f32_to_f16(1.0f) == 0x3c00);
}

TEST_CASE("bf16 rounds to nearest even and keeps NaN a NaN") {
  CHECK(f32_to_bf16(1.0f) == 0x3f80);
  CHECK(bf16_to_f32(f32_to_bf16(3.140625f)) == 3.140625f);
  // 1 + 2^-8 is halfway between 1 and 1 + 2^-7: ties go to the even one (1).
  CHECK(bf16_to_f32(f32_to_bf16(1.0f + 1.0f / 256)) == 1.0f);
  CHECK(bf16_to_f32(f32_to_bf16(1.0f + 3.0f / 256)) == 1.0f + 4.0f / 256);
  CHECK(std::isnan(bf16_to_f32(f32_to_bf16(std::numeric_limits<float>::quiet_NaN()))));
}

TEST_CASE("dtype names parse and print, and a wrong one names itself") {
  CHECK(parse_dtype("bf16") == DType::bf16);
  CHECK(fmt::format("{}", DType::f16) == "f16");
  CHECK(dtype_size(DType::f32) == 4);
  CHECK_THROWS_WITH_AS(parse_dtype("f8", "cfg.dtype"), "cfg.dtype: unknown dtype 'f8' (expected f32, f16 or bf16)",
                       ConfigError);
}

TEST_CASE("host buffers are aligned, zeroed, and copied only on request") {
  HostBuffer b(DType::bf16, Shape{3, 5, 7});
  CHECK(b.bytes() == 3 * 5 * 7 * 2);
  CHECK(reinterpret_cast<uintptr_t>(b.data()) % 64 == 0);
  auto* p = static_cast<uint16_t*>(b.data());
  CHECK(p[104] == 0);
  p[104] = 7;
  HostBuffer c = b.copy();
  CHECK(static_cast<uint16_t*>(c.data())[104] == 7);
  CHECK(c.data() != b.data());
  CHECK(b.view().strides == Shape{35, 7, 1});
  CHECK(Shape{2, 3}.str() == "[2, 3]");
}
