// mstar_isa_tests: `--isa NAME` first, then doctest's own options. A set the
// processor lacks exits 77 with "skipped: no NAME on this processor".
#include <string>
#include <vector>

#include "choice_args.h"
#include "isa.h"

namespace mstar::test {

namespace {
kernels::CpuIsa g_isa = kernels::CpuIsa::generic;
}  // namespace

kernels::CpuIsa isa_under_test() { return g_isa; }

ChoiceArgs parse_isa_args(int argc, const char* const* argv, bool (*supports)(kernels::CpuIsa)) {
  std::vector<std::string> names;
  for (kernels::CpuIsa isa : kernels::kCpuIsas) names.emplace_back(kernels::cpu_isa_name(isa));
  return parse_choice_args(argc, argv, "isa", "instruction set", names, [&](std::size_t i) {
    return supports(kernels::kCpuIsas[i]) ? std::string() : "no " + names[i] + " on this processor";
  });
}

}  // namespace mstar::test

int main(int argc, char** argv) {
  using namespace mstar;
  const test::ChoiceArgs a = test::parse_isa_args(argc, argv, &kernels::cpu_supports);
  if (a.exit_code < 0) test::g_isa = kernels::kCpuIsas[a.choice];
  return test::run_choice(argc, argv, a,
                          std::string("instruction set under test: ") + kernels::cpu_isa_name(test::g_isa));
}
