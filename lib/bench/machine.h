#pragma once
// What the benchmarks need to know about the machine they run on.
#include <cstdint>
#include <string>

namespace mstar::bench {

struct Machine {
  std::string cpu;        // model name
  int cores = 0;          // online processors
  int64_t llc_bytes = 0;  // last-level cache
  std::string isa;        // the cpu backend's body: avx2 or generic
};

Machine machine();
std::string to_string(const Machine& m);

}  // namespace mstar::bench
