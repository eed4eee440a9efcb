#pragma once
// How a resource runs: on which backend (its allocator and its ops) and with
// how many threads for the host backends. One struct for every resource.
#include <string>

#include <fmt/format.h>

#include "backend.h"
#include "core/errors.h"

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

}  // namespace mstar
