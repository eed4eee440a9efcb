#include "bench/machine.h"

#include <unistd.h>

#include <fstream>

#include <fmt/format.h>

#include "kernels/cpu/isa.h"

namespace mstar::bench {

namespace {

int64_t parse_size(std::string s) {
  int64_t mult = 1;
  if (!s.empty() && (s.back() == 'K' || s.back() == 'k')) mult = 1024, s.pop_back();
  else if (!s.empty() && s.back() == 'M') mult = 1 << 20, s.pop_back();
  try {
    return std::stoll(s) * mult;
  } catch (const std::exception&) {
    return 0;
  }
}

}  // namespace

Machine machine() {
  Machine m;
  std::ifstream cpuinfo("/proc/cpuinfo");
  for (std::string line; std::getline(cpuinfo, line);)
    if (line.rfind("model name", 0) == 0) {
      m.cpu = line.substr(line.find(':') + 2);
      break;
    }
  m.cores = static_cast<int>(sysconf(_SC_NPROCESSORS_ONLN));
  // The highest cache level sysfs lists for cpu0 (getconf's figure is not
  // reliable in virtual machines).
  for (int idx = 5; idx >= 0 && m.llc_bytes == 0; --idx) {
    std::ifstream f(fmt::format("/sys/devices/system/cpu/cpu0/cache/index{}/size", idx));
    std::string s;
    if (f >> s) m.llc_bytes = parse_size(s);
  }
  if (m.llc_bytes == 0) m.llc_bytes = 32 << 20;
  m.isa = kernels::cpu_isa_name(kernels::best_cpu_isa());
  return m;
}

std::string to_string(const Machine& m) {
  return fmt::format("{}, {} cores, last-level cache {} MiB, cpu backend body {}", m.cpu, m.cores, m.llc_bytes >> 20,
                     m.isa);
}

}  // namespace mstar::bench
