#pragma once
// The per-instruction-set test program, mstar_isa_tests (isa_main.cpp): it
// runs once per instruction set (`mstar_isa_tests --isa NAME [doctest
// options]`), and its tests exercise the body of that set only. One ctest
// per set; a set this processor lacks is reported as skipped (exit 77), not
// passed.
#include <string>

#include "kernels/cpu/isa.h"

namespace mstar::test {

// The instruction set this run covers.
kernels::CpuIsa isa_under_test();

constexpr int kSkipped = 77;  // the ctests' SKIP_RETURN_CODE
constexpr int kUsage = 2;     // as every mstar program

// What the program does with its command line: run the tests for `isa`
// (exit_code < 0; argv from `rest` on are doctest's), or exit at once with
// exit_code after printing message (kSkipped: the processor lacks the set;
// kUsage: no or an unknown set named).
struct IsaArgs {
  int exit_code = -1;
  kernels::CpuIsa isa = kernels::CpuIsa::generic;
  int rest = 0;
  std::string message;
};
IsaArgs parse_isa_args(int argc, const char* const* argv, bool (*supports)(kernels::CpuIsa));

}  // namespace mstar::test
