#include "core/host_memory.h"

#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <new>

#if defined(__linux__)
#include <sys/mman.h>
#include <unistd.h>
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

std::size_t rounded_size(std::size_t bytes) { return bytes == 0 ? kAlign : (bytes + kAlign - 1) / kAlign * kAlign; }

#if defined(__linux__) && defined(MADV_HUGEPAGE)
#define MSTAR_HUGE_MAPPINGS 1
// A large block is its own mapping, never heap memory: the advice only
// takes effect on pages not yet touched, and the heap hands back memory
// that earlier blocks may have faulted in on small pages. glibc serves a
// large request from the heap once a larger block has been freed (its mmap
// threshold grows to the freed size); through posix_memalign, the whole
// test binary run in one process gave a 5 MiB block no huge page at all.
// The cost, measured: loading the Qwen2.5-0.5B-shaped checkpoint takes 0.75
// s against 0.71 (medians of 6 alternated runs of mstar-bench checkpoint,
// docs/PERFORMANCE.md, "Weights in memory"): every block is faulted in
// fresh.
std::size_t page_size() {
  static const auto page = static_cast<std::size_t>(sysconf(_SC_PAGESIZE));
  return page;
}

std::size_t mapped_size(std::size_t bytes) { return (bytes + page_size() - 1) / page_size() * page_size(); }

void* map_huge(std::size_t bytes) {
  const std::size_t len = mapped_size(bytes);
  // Mapped with a spare huge page, so a 2 MiB boundary lies inside; the ends
  // around [aligned, aligned + len) are unmapped again.
  void* base = mmap(nullptr, len + kHugePage, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (base == MAP_FAILED) throw std::bad_alloc();
  const auto b = reinterpret_cast<std::uintptr_t>(base);
  const std::uintptr_t aligned = (b + kHugePage - 1) / kHugePage * kHugePage;
  if (aligned > b) (void)munmap(base, aligned - b);
  const std::uintptr_t end = b + len + kHugePage;
  if (end > aligned + len) (void)munmap(reinterpret_cast<void*>(aligned + len), end - (aligned + len));
  void* p = reinterpret_cast<void*>(aligned);
  // Advice only: without huge pages (disabled, or none free) the block works
  // on small ones, so a refusal is not an error.
  (void)madvise(p, bytes / kHugePage * kHugePage, MADV_HUGEPAGE);
  return p;
}
#endif

}  // namespace

void* allocate_host(std::size_t bytes) {
  const std::size_t rounded = rounded_size(bytes);
#ifdef MSTAR_HUGE_MAPPINGS
  if (bytes >= kHugeFrom) {
    auto* p = static_cast<unsigned char*>(map_huge(rounded));
    // Fresh pages read as zero already; one byte of each is written now,
    // after the advice, so the block is resident (2 MiB at a time where huge
    // pages come) before anything runs on it, without zeroing it twice.
    for (std::size_t off = 0; off < rounded; off += page_size()) p[off] = 0;
    return p;
  }
  const std::size_t align = kAlign;
#else
  const std::size_t align = bytes >= kHugeFrom ? kHugePage : kAlign;
#endif
  void* p = nullptr;
  if (posix_memalign(&p, align, rounded) != 0) throw std::bad_alloc();
  std::memset(p, 0, rounded);
  return p;
}

void free_host(void* p, std::size_t bytes) noexcept {
#ifdef MSTAR_HUGE_MAPPINGS
  if (p && bytes >= kHugeFrom) {
    (void)munmap(p, mapped_size(rounded_size(bytes)));
    return;
  }
#else
  (void)bytes;
#endif
  std::free(p);
}

}  // namespace mstar
