#include "core/host_memory.h"

#include <cstdlib>
#include <cstring>
#include <new>

#if defined(__linux__)
#include <sys/mman.h>
#endif

namespace mstar {

namespace {

constexpr std::size_t kAlign = 64;
constexpr std::size_t kHugePage = std::size_t{2} << 20;
// From here up a block starts on a 2 MiB boundary and asks for huge pages
// over its whole 2 MiB pages (a last partial one stays on small pages, so a
// block never holds more than its size). Why: a decode step streams every
// weight once, and with 4 KiB pages each 4 KiB of weights costs a TLB miss
// whose page walk the hardware prefetchers do not hide (they stop at page
// boundaries); with huge pages, decode steps measured 3 to 8% faster in
// alternated rounds (docs/PERFORMANCE.md, "Weights in memory"). Kernels set
// to give anonymous memory huge pages only when asked
// (/sys/kernel/mm/transparent_hugepage/enabled = madvise, as on the machines
// measured) give none without this advice.
constexpr std::size_t kHugeFrom = kHugePage;

}  // namespace

void* allocate_host(std::size_t bytes) {
  const bool huge = bytes >= kHugeFrom;
  const std::size_t rounded = bytes == 0 ? kAlign : (bytes + kAlign - 1) / kAlign * kAlign;
  void* p = nullptr;
  if (posix_memalign(&p, huge ? kHugePage : kAlign, rounded) != 0) throw std::bad_alloc();
#if defined(__linux__) && defined(MADV_HUGEPAGE)
  // Advice only: without huge pages (disabled, or none free) the block works
  // on small ones, so a refusal is not an error. Given before the first
  // touch, so the zeroing below faults the block in 2 MiB at a time.
  if (huge) (void)madvise(p, rounded / kHugePage * kHugePage, MADV_HUGEPAGE);
#endif
  std::memset(p, 0, rounded);
  return p;
}

void free_host(void* p) noexcept { std::free(p); }

}  // namespace mstar
