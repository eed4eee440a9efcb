#include "core/machine_memory.h"

#include <unistd.h>

#include <algorithm>
#include <fstream>
#include <string>

namespace mstar {

namespace {

// cgroup v2's memory.max, then v1's limit; "max" or a missing file is no limit.
std::size_t cgroup_limit() {
  for (const char* path : {"/sys/fs/cgroup/memory.max", "/sys/fs/cgroup/memory/memory.limit_in_bytes"}) {
    std::ifstream f(path);
    std::string s;
    if (!(f >> s) || s == "max") continue;
    try {
      return static_cast<std::size_t>(std::stoull(s));
    } catch (const std::exception&) {
    }
  }
  return SIZE_MAX;
}

}  // namespace

std::size_t host_memory_bytes() {
  static const std::size_t bytes = [] {
    const long pages = ::sysconf(_SC_PHYS_PAGES), page = ::sysconf(_SC_PAGESIZE);
    const std::size_t phys = pages > 0 && page > 0 ? static_cast<std::size_t>(pages) * static_cast<std::size_t>(page)
                                                   : SIZE_MAX;
    return std::min(phys, cgroup_limit());
  }();
  return bytes;
}

}  // namespace mstar
