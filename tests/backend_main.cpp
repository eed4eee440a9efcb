// mstar_backend_tests: `--backend NAME` first, then doctest's own options. A
// backend that cannot run here (not built into this binary, or no device
// visible) exits 77 saying why.
#include <string>
#include <vector>

#include "on_backend.h"

namespace mstar::test {

namespace {
Backend g_backend = Backend::cpu;
}  // namespace

Backend backend_under_test() { return g_backend; }

ChoiceArgs parse_backend_args(int argc, const char* const* argv, bool (*available)(Backend, std::string*)) {
  std::vector<std::string> names;
  for (Backend b : kBackends) names.emplace_back(to_string(b));
  return parse_choice_args(argc, argv, "backend", "backend", names, [&](std::size_t i) {
    std::string why;
    return available(kBackends[i], &why) ? std::string() : names[i] + ": " + why;
  });
}

}  // namespace mstar::test

int main(int argc, char** argv) {
  using namespace mstar;
  const test::ChoiceArgs a = test::parse_backend_args(argc, argv, &backend_available);
  if (a.exit_code < 0) test::g_backend = kBackends[a.choice];
  return test::run_choice(argc, argv, a, "backend under test: " + std::string(to_string(test::g_backend)));
}
