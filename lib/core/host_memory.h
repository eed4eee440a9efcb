#pragma once
// Host memory for tensors: zeroed, 64-byte aligned (a cache line, and the
// widest vector load), and for large blocks backed by 2 MiB pages where the
// kernel has them.
#include <cstddef>

namespace mstar {

// `bytes` zeroed bytes (at least one); throws std::bad_alloc when the heap
// has none. Free with free_host.
void* allocate_host(std::size_t bytes);
void free_host(void* p) noexcept;

}  // namespace mstar
