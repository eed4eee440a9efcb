#pragma once
// How much memory this machine gives the process: physical memory, or the
// control group's limit when one is set and smaller. Sizes users ask for
// (slots, sessions, benchmark shapes) are compared with it before anything
// is allocated, so an absurd size is a refusal naming it, not an
// out-of-memory kill.
#include <cstddef>

namespace mstar {

std::size_t host_memory_bytes();

}  // namespace mstar
