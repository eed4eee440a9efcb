#pragma once
// How a resource runs: on which backend (its allocator and its ops) and with
// how many threads for the host backends. One struct for every resource.
#include <cstddef>
#include <optional>
#include <string>

#include <fmt/format.h>

#include "kernels/backend.h"
#include "core/errors.h"
#include "core/files.h"
#include "core/machine_memory.h"

namespace mstar {

struct ResourceOptions {
  Backend backend = Backend::cpu;
  int threads = 1;
};

// Throws ConfigError naming the resource type when the options cannot run.
inline void check_options(const char* type, const ResourceOptions& o) {
  if (o.threads < 1) throw ConfigError(fmt::format("{}: threads must be at least 1, got {}", type, o.threads));
  std::string why;
  if (!backend_available(o.backend, &why))
    throw ConfigError(fmt::format("{}: backend '{}' cannot run: {}", type, to_string(o.backend), why));
}

// Bytes the backend's memory holds on this machine, when mstar knows it: the
// host's memory for the host backends. A device backend reports none here;
// its allocator refuses what its memory cannot hold.
inline std::optional<std::size_t> backend_memory_bytes(Backend b) {
  if (b == Backend::reference || b == Backend::cpu) return host_memory_bytes();
  return std::nullopt;
}

// Throws ConfigError "<what> needs <bytes>; the <backend> backend has <n> on
// this machine" when `bytes` cannot fit: checked before allocating, so an
// absurd size is a refusal that names it, not an out-of-memory kill.
inline void check_fits_memory(const std::string& what, std::size_t bytes, Backend b) {
  const auto have = backend_memory_bytes(b);
  if (have && bytes > *have)
    throw ConfigError(fmt::format("{} needs {}; the {} backend has {} on this machine", what, bytes_text(bytes),
                                  to_string(b), bytes_text(*have)));
}

}  // namespace mstar
