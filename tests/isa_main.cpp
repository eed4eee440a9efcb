// mstar_isa_tests: `--isa NAME` first, then doctest's own options. A set the
// processor lacks exits 77 with "skipped: no NAME on this processor".
#define DOCTEST_CONFIG_IMPLEMENT
#include <doctest/doctest.h>

#include <cstdio>
#include <string_view>
#include <vector>

#include "isa.h"

namespace mstar::test {

namespace {
kernels::CpuIsa g_isa = kernels::CpuIsa::generic;
}  // namespace

kernels::CpuIsa isa_under_test() { return g_isa; }

IsaArgs parse_isa_args(int argc, const char* const* argv, bool (*supports)(kernels::CpuIsa)) {
  using kernels::CpuIsa;
  IsaArgs a;
  const std::string usage = "usage: mstar_isa_tests --isa generic|avx2|avx512|avx512_bf16|amx_bf16 [doctest options]";
  if (argc < 3 || std::string_view(argv[1]) != "--isa") {
    a.exit_code = kUsage;
    a.message = usage;
    return a;
  }
  const std::string_view name = argv[2];
  for (CpuIsa isa : kernels::kCpuIsas)
    if (name == kernels::cpu_isa_name(isa)) {
      a.isa = isa;
      a.rest = 3;
      if (!supports(isa)) {
        a.exit_code = kSkipped;
        a.message = "skipped: no " + std::string(name) + " on this processor";
      }
      return a;
    }
  a.exit_code = kUsage;
  a.message = "unknown instruction set '" + std::string(name) + "'\n" + usage;
  return a;
}

}  // namespace mstar::test

int main(int argc, char** argv) {
  using namespace mstar;
  const test::IsaArgs a = test::parse_isa_args(argc, argv, &kernels::cpu_supports);
  if (a.exit_code >= 0) {
    std::fprintf(a.exit_code == test::kSkipped ? stdout : stderr, "%s\n", a.message.c_str());
    return a.exit_code;
  }
  test::g_isa = a.isa;
  std::printf("instruction set under test: %s\n", kernels::cpu_isa_name(a.isa));
  std::vector<const char*> rest{argv[0]};
  for (int i = a.rest; i < argc; ++i) rest.push_back(argv[i]);
  doctest::Context context;
  context.applyCommandLine(static_cast<int>(rest.size()), rest.data());
  return context.run();
}
