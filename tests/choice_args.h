#pragma once
// The command line of a test program that runs once per choice, each run a
// ctest of its own: `PROGRAM --FLAG NAME [doctest options]`
// (`mstar_isa_tests --isa avx2`, `mstar_backend_tests --backend cuda`). A
// choice this machine cannot run exits 77, which the ctests count as
// skipped, not passed.
#include <functional>
#include <string>
#include <string_view>
#include <vector>

namespace mstar::test {

constexpr int kSkipped = 77;  // the ctests' SKIP_RETURN_CODE
constexpr int kUsage = 2;     // as every mstar program

// What the program does with its command line: run the tests for
// names[choice] (exit_code < 0; argv from `rest` on are doctest's), or exit
// at once with exit_code after printing message (kSkipped: the choice cannot
// run here; kUsage: no or an unknown name).
struct ChoiceArgs {
  int exit_code = -1;
  std::size_t choice = 0;
  int rest = 0;
  std::string message;
};

// `noun` names a choice in messages ("unknown NOUN 'x'"); why_skipped(i):
// empty when names[i] can run on this machine, else why not.
ChoiceArgs parse_choice_args(int argc, const char* const* argv, std::string_view flag, std::string_view noun,
                             const std::vector<std::string>& names,
                             const std::function<std::string(std::size_t)>& why_skipped);

// The program's end: prints the message of a run that stops early (a skip
// on standard output, a usage error on standard error) and returns its exit
// code; otherwise says what is under test and runs doctest with argv[0] and
// argv from a.rest on.
int run_choice(int argc, const char* const* argv, const ChoiceArgs& a, std::string_view under_test);

}  // namespace mstar::test
