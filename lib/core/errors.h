#pragma once
// mstar's three error channels:
//  - expected outcomes (a full pool, a refused step) are [[nodiscard]] values,
//    see resources/resource.h;
//  - bad configuration or bad input throws one of the typed exceptions below,
//    whose message names the key, the value and the place;
//  - a broken invariant is a bug in mstar and stops the process via
//    MSTAR_ASSERT, which stays on in release builds: the checks are cheap and
//    a cache silently reading the wrong entries is worse than a crash.
#include <stdexcept>
#include <string>

namespace mstar {

// A configuration value is wrong (a YAML key, a config field, a CLI flag).
class ConfigError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// A runtime input is wrong (a tensor of the wrong shape, a malformed trace).
class InputError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

[[noreturn]] void assert_fail(const char* expr, const char* file, int line, const std::string& msg);

}  // namespace mstar

#define MSTAR_ASSERT(cond, msg)                                          \
  do {                                                                   \
    if (!(cond)) ::mstar::assert_fail(#cond, __FILE__, __LINE__, (msg)); \
  } while (0)
