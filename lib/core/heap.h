#pragma once
// The C library's heap, seen from inside the process. Freed memory stays
// resident until the allocator hands its pages back, and glibc hands back
// only the top of a heap on its own: a buffer of a few MiB freed below
// long-lived allocations stays resident. A long-running engine that has
// just freed such buffers (a snapshot written, a resumed stream's states
// loaded) returns them, so its resident memory follows what it holds
// (measured in docs/reliability.md, "Soak").
#include <cstdint>

namespace mstar {

// Returns the heap's free pages to the operating system (glibc's
// malloc_trim: the top of every arena and whole free pages inside it).
// Elsewhere (another C library, a sanitizer's allocator) it does nothing.
void return_free_heap();

// Bytes the program holds through malloc (glibc's mallinfo2: in-use chunks
// plus mmapped ones); -1 where the heap in use does not say.
int64_t heap_in_use_bytes();

}  // namespace mstar
