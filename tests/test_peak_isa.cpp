// The arithmetic ceiling's loops (cpu/peak_cpu.h) for the run's instruction
// set: they run the multiply-adds they count, so mstar-bench's peak is a
// measurement of that arithmetic and not of an emptied loop.
#include <doctest/doctest.h>

#include "kernels/cpu/peak_cpu.h"
#include "isa.h"

using namespace mstar::kernels;

TEST_CASE("the f32 peak loop counts its flops and converges every lane to 1") {
  const CpuIsa isa = mstar::test::isa_under_test();
  const PeakRun one = cpu_peak_loop(isa, PeakOp::fma, 1);
  // A multiply-add is 2 flops: flops / 2 per round is the lanes of all chains.
  const double lanes = one.flops / 2;
  CHECK(lanes >= 8);
  CHECK(cpu_peak_loop(isa, PeakOp::fma, 1000).flops == doctest::Approx(1000 * one.flops));
  // Each lane starts near 1 but not at it (the chains differ, up to 1.023),
  // and x * 0.5 + 0.5 brings it to exactly 1 within 30 rounds.
  const PeakRun none = cpu_peak_loop(isa, PeakOp::fma, 0);
  CHECK(none.flops == 0);
  CHECK(none.checksum > lanes * 1.001);
  CHECK(cpu_peak_loop(isa, PeakOp::fma, 10).checksum > lanes);
  CHECK(cpu_peak_loop(isa, PeakOp::fma, 1000).checksum == static_cast<float>(lanes));
}

TEST_CASE("the vdpbf16ps peak loop adds its products exactly") {
  const CpuIsa isa = mstar::test::isa_under_test();
  if (!has_bf16_pairs(isa)) {
    MESSAGE("not run: vdpbf16ps is an avx512_bf16 instruction (that set's run covers it)");
    return;
  }
  // 24 chains of 16 lanes, chain c starting at c; each round adds 2 pairs'
  // products 1/64 * 1/2 to every lane: 6,400 rounds add 100, exactly.
  const PeakRun r = cpu_peak_loop(isa, PeakOp::bf16_dot, 6400);
  CHECK(r.flops == doctest::Approx(4.0 * 16 * 24 * 6400));
  CHECK(r.checksum == 16.0f * (276.0f + 24 * 100.0f));
}

TEST_CASE("the tdpbf16ps peak loop adds its products exactly") {
  const CpuIsa isa = mstar::test::isa_under_test();
  if (isa != CpuIsa::amx_bf16) {
    MESSAGE("not run: tdpbf16ps is an amx_bf16 instruction (that set's run covers it)");
    return;
  }
  // 4 tiles of 16 x 16 sums from 0; each round adds 32 products 1/64 * 1/2
  // to every sum: 100 rounds add 25, exactly.
  const PeakRun r = cpu_peak_loop(isa, PeakOp::tiles, 100);
  CHECK(r.flops == doctest::Approx(4.0 * 2 * 16 * 16 * 32 * 100));
  CHECK(r.checksum == 4 * 256 * 25.0f);
}
