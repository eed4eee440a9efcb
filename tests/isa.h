#pragma once
// The per-instruction-set test program, mstar_isa_tests (isa_main.cpp): it
// runs once per instruction set (`mstar_isa_tests --isa NAME [doctest
// options]`, choice_args.h), and its tests exercise the body of that set
// only. One ctest per set; a set this processor lacks is reported as skipped
// (exit 77), not passed.
#include "choice_args.h"
#include "kernels/cpu/isa.h"

namespace mstar::test {

// The instruction set this run covers.
kernels::CpuIsa isa_under_test();

// The program's command line; `supports` says whether this processor has a
// set (passed in, so the skip path is tested on any processor).
ChoiceArgs parse_isa_args(int argc, const char* const* argv, bool (*supports)(kernels::CpuIsa));

}  // namespace mstar::test
