#include "backend.h"

#include <fmt/format.h>

#include "core/errors.h"

namespace mstar {

std::string_view to_string(Backend b) {
  switch (b) {
    case Backend::reference: return "reference";
    case Backend::cpu: return "cpu";
    case Backend::cuda: return "cuda";
  }
  return "?";
}

Backend parse_backend(std::string_view text, std::string_view what) {
  if (text == "reference") return Backend::reference;
  if (text == "cpu") return Backend::cpu;
  if (text == "cuda") return Backend::cuda;
  throw ConfigError(fmt::format("{}: unknown backend '{}' (expected reference, cpu or cuda)", what, text));
}

bool backend_available(Backend b) { return b != Backend::cuda; }

}  // namespace mstar
