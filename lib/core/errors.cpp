#include "core/errors.h"

#include <cstdio>
#include <cstdlib>

namespace mstar {

void assert_fail(const char* expr, const char* file, int line, const std::string& msg) {
  std::fprintf(stderr, "mstar: invariant broken at %s:%d: %s (%s)\n", file, line, msg.c_str(), expr);
  std::abort();
}

}  // namespace mstar
