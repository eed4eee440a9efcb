#include "core/heap.h"

#if defined(__GLIBC__)
#include <malloc.h>
#endif

// Under AddressSanitizer malloc is the sanitizer's: glibc's heap is not the
// one in use, so it is neither trimmed nor asked.
#if defined(__SANITIZE_ADDRESS__)
#define MSTAR_SANITIZER_HEAP 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define MSTAR_SANITIZER_HEAP 1
#endif
#endif
#if defined(__GLIBC__) && !defined(MSTAR_SANITIZER_HEAP)
#define MSTAR_GLIBC_HEAP 1
#endif

namespace mstar {

void return_free_heap() {
#if defined(MSTAR_GLIBC_HEAP)
  ::malloc_trim(0);
#endif
}

int64_t heap_in_use_bytes() {
#if defined(MSTAR_GLIBC_HEAP) && (__GLIBC__ > 2 || (__GLIBC__ == 2 && __GLIBC_MINOR__ >= 33))
  const struct mallinfo2 m = ::mallinfo2();
  return static_cast<int64_t>(m.uordblks + m.hblkhd);
#else
  return -1;
#endif
}

}  // namespace mstar
