#pragma once
// Host memory for tensors: zeroed, 64-byte aligned (a cache line, and the
// widest vector load), and for large blocks backed by 2 MiB pages where the
// kernel has them.
#include <cstddef>

namespace mstar {

// `bytes` zeroed bytes (at least one); throws std::bad_alloc when the system
// has none. Free with free_host, passing the same `bytes`: a large block is
// its own mapping, and unmapping needs its length.
void* allocate_host(std::size_t bytes);
void free_host(void* p, std::size_t bytes) noexcept;

}  // namespace mstar
