#include <cmath>
#include <cstdio>
#include <fstream>
#include <limits>
#include <string>

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
  CHECK(row_bytes(DType::f32, 1) == 4);
  // Every type in the table is listed, the built-in ones first (a test may register more).
  CHECK_THROWS_WITH_AS(parse_dtype("f8", "cfg.dtype"),
                       doctest::Contains("cfg.dtype: unknown dtype 'f8' (expected f32, f16"), ConfigError);
}

TEST_CASE("first_non_finite finds the first infinity or NaN of every dtype, in any block, and none in finite data") {
  // 10,000 elements: two whole blocks of the scan (4,096) and a partial one.
  constexpr std::size_t n = 10000;
  for (DType dt : {DType::f32, DType::f16, DType::bf16}) {
    CAPTURE(to_string(dt));
    HostBuffer b(dt, Shape{static_cast<int64_t>(n)});
    auto put = [&](std::size_t i, float x) {
      if (dt == DType::f32) static_cast<float*>(b.data())[i] = x;
      else static_cast<uint16_t*>(b.data())[i] = dt == DType::f16 ? f32_to_f16(x) : f32_to_bf16(x);
    };
    for (std::size_t i = 0; i < n; ++i) put(i, (i % 7 == 0 ? -1.0f : 1.0f) * (0.5f + static_cast<float>(i % 100)));
    // The largest finite value, by bits: every exponent bit but the lowest set.
    if (dt == DType::f32) static_cast<uint32_t*>(b.data())[n - 2] = 0x7f7fffffu;
    else static_cast<uint16_t*>(b.data())[n - 2] = dt == DType::f16 ? 0x7bff : 0x7f7f;
    CHECK_FALSE(first_non_finite(b.data(), dt, n).has_value());
    for (std::size_t at : {std::size_t{0}, std::size_t{4095}, std::size_t{4096}, std::size_t{8191}, n - 1}) {
      CAPTURE(at);
      put(at, std::numeric_limits<float>::quiet_NaN());
      if (at + 1 < n) put(at + 1, -std::numeric_limits<float>::infinity());  // a later one is not the first
      const auto bad = first_non_finite(b.data(), dt, n);
      REQUIRE(bad.has_value());
      CHECK(*bad == at);
      CHECK(first_non_finite(b.data(), dt, at).has_value() == false);  // the elements before it are finite
      put(at, 1.0f);
      if (at + 1 < n) put(at + 1, 1.0f);
    }
  }
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

namespace {

// kB of AnonHugePages in the mappings of /proc/self/smaps that overlap
// [begin, end).
int64_t anon_huge_kb(uintptr_t begin, uintptr_t end) {
  std::ifstream smaps("/proc/self/smaps");
  int64_t kb = 0;
  bool inside = false;
  for (std::string line; std::getline(smaps, line);) {
    uintptr_t lo = 0, hi = 0;
    if (std::sscanf(line.c_str(), "%lx-%lx ", &lo, &hi) == 2 && line.find(':') > line.find(' ')) {
      inside = lo < end && begin < hi;
    } else if (inside && line.starts_with("AnonHugePages:")) {
      kb += std::stoll(line.substr(14));
    }
  }
  return kb;
}

// The name /proc/self/maps gives the mapping that holds `at` ("" for an
// anonymous one, "[heap]" for the heap), or "none" where none does.
std::string mapping_name(uintptr_t at) {
  std::ifstream maps("/proc/self/maps");
  for (std::string line; std::getline(maps, line);) {
    uintptr_t lo = 0, hi = 0;
    int name_at = 0;
    if (std::sscanf(line.c_str(), "%lx-%lx %*s %*s %*s %*s %n", &lo, &hi, &name_at) >= 2 && lo <= at && at < hi)
      return name_at > 0 ? line.substr(static_cast<std::size_t>(name_at)) : std::string{};
  }
  return "none";
}

}  // namespace

TEST_CASE("host buffers of 2 MiB and more start on a 2 MiB boundary, on huge pages where the kernel offers them") {
  constexpr int64_t kMiB = 1 << 20;
  // A larger block freed first, as in a process that has run a while: glibc
  // then serves requests up to that size from the heap (its mmap threshold
  // grows), where pages earlier blocks faulted in on small pages come back.
  // The block must still be a mapping of its own.
  { HostBuffer freed(DType::f32, Shape{16 * kMiB / 4}); }
  HostBuffer b(DType::f32, Shape{(5 * kMiB + 64) / 4});
  const auto at = reinterpret_cast<uintptr_t>(b.data());
  CHECK(at % (2 * kMiB) == 0);
  CHECK(mapping_name(at) == "");
  const auto* p = static_cast<const float*>(b.data());
  CHECK(p[0] == 0.0f);
  CHECK(p[b.shape().numel() - 1] == 0.0f);
  std::ifstream thp("/sys/kernel/mm/transparent_hugepage/enabled");
  std::string modes;
  std::getline(thp, modes);
  const bool on_advice = modes.find("[madvise]") != std::string::npos;
  if (!on_advice && modes.find("[always]") == std::string::npos) {
    std::printf("skipped: this kernel gives no transparent huge pages (enabled: '%s')\n", modes.c_str());
    return;
  }
  // Its two whole 2 MiB pages were advised.
  CHECK(anon_huge_kb(at, at + 4 * kMiB) >= 2048);
  // The last MiB was not: where huge pages come only on advice, it has none
  // (with "always" the kernel may give it one of its own accord).
  if (on_advice) CHECK(anon_huge_kb(at + 4 * kMiB, at + 5 * kMiB + 64) == 0);
}
