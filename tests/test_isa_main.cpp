// The per-instruction-set program's command line (isa_main.cpp,
// choice_args.h): a set the processor lacks is skipped with exit 77,
// whatever this processor has (the support check is passed in, so the skip
// path runs here too).
#include <doctest/doctest.h>

#include "isa.h"

using namespace mstar;
using kernels::CpuIsa;

namespace {
bool none(CpuIsa isa) { return isa == CpuIsa::generic; }
bool all(CpuIsa) { return true; }
}  // namespace

TEST_CASE("isa tests: a set the processor lacks is skipped with exit 77") {
  const char* argv[] = {"mstar_isa_tests", "--isa", "avx512_bf16", "-tc=*"};
  const test::ChoiceArgs a = test::parse_isa_args(4, argv, &none);
  CHECK(a.exit_code == 77);
  CHECK(a.message == "skipped: no avx512_bf16 on this processor");
  const test::ChoiceArgs g = test::parse_isa_args(3, argv, &all);
  CHECK(g.exit_code == -1);
  CHECK(kernels::kCpuIsas[g.choice] == CpuIsa::avx512_bf16);
  CHECK(g.rest == 3);  // doctest's options follow
}

TEST_CASE("isa tests: every set by name, generic is never skipped") {
  for (CpuIsa isa : kernels::kCpuIsas) {
    const char* argv[] = {"mstar_isa_tests", "--isa", kernels::cpu_isa_name(isa)};
    const test::ChoiceArgs a = test::parse_isa_args(3, argv, &none);
    CHECK(kernels::kCpuIsas[a.choice] == isa);
    CHECK(a.exit_code == (isa == CpuIsa::generic ? -1 : 77));
  }
}

TEST_CASE("isa tests: no or an unknown set is a usage error (exit 2)") {
  const char* unknown[] = {"mstar_isa_tests", "--isa", "sse9"};
  const test::ChoiceArgs a = test::parse_isa_args(3, unknown, &all);
  CHECK(a.exit_code == 2);
  CHECK(a.message.rfind("unknown instruction set 'sse9'", 0) == 0);
  const char* missing[] = {"mstar_isa_tests", "--isa"};
  CHECK(test::parse_isa_args(2, missing, &all).exit_code == 2);
  const char* not_first[] = {"mstar_isa_tests", "-tc=*", "--isa", "avx2"};
  CHECK(test::parse_isa_args(4, not_first, &all).exit_code == 2);
}
