// The per-backend program's command line (backend_main.cpp, choice_args.h):
// a backend that cannot run here is skipped with exit 77 and the reason,
// whatever this machine has (availability is passed in, so the skip path
// runs here too).
#include <doctest/doctest.h>

#include <string>

#include "on_backend.h"

using namespace mstar;

namespace {
bool host_only(Backend b, std::string* why) {
  if (b != Backend::cuda) return true;
  *why = "no GPU visible";
  return false;
}
bool all(Backend, std::string*) { return true; }
}  // namespace

TEST_CASE("backend tests: a backend that cannot run here is skipped with exit 77, saying why") {
  const char* argv[] = {"mstar_backend_tests", "--backend", "cuda", "-tc=*"};
  const test::ChoiceArgs a = test::parse_backend_args(4, argv, &host_only);
  CHECK(a.exit_code == 77);
  CHECK(a.message == "skipped: cuda: no GPU visible");
  const test::ChoiceArgs c = test::parse_backend_args(4, argv, &all);
  CHECK(c.exit_code == -1);
  CHECK(kBackends[c.choice] == Backend::cuda);
  CHECK(c.rest == 3);  // doctest's options follow
  const char* cpu[] = {"mstar_backend_tests", "--backend", "cpu"};
  const test::ChoiceArgs h = test::parse_backend_args(3, cpu, &host_only);
  CHECK(h.exit_code == -1);
  CHECK(kBackends[h.choice] == Backend::cpu);
}

TEST_CASE("backend tests: no or an unknown backend is a usage error (exit 2)") {
  const char* unknown[] = {"mstar_backend_tests", "--backend", "tpu"};
  const test::ChoiceArgs a = test::parse_backend_args(3, unknown, &all);
  CHECK(a.exit_code == 2);
  CHECK(a.message.rfind("unknown backend 'tpu'\nusage: mstar_backend_tests --backend reference|cpu|cuda", 0) == 0);
  const char* missing[] = {"mstar_backend_tests", "--backend"};
  CHECK(test::parse_backend_args(2, missing, &all).exit_code == 2);
  const char* other_flag[] = {"mstar_backend_tests", "--isa", "cpu"};
  CHECK(test::parse_backend_args(3, other_flag, &all).exit_code == 2);
}
