#pragma once
#include <string_view>

namespace mstar {

// Which implementation runs the kernels. `reference` is plain loops, the
// oracle every other backend is tested against; `cpu` is the fast default;
// `cuda` exists in builds where nvcc was found.
enum class Backend : unsigned char { reference, cpu, cuda };

std::string_view to_string(Backend b);
// Throws ConfigError naming `what` and the text.
Backend parse_backend(std::string_view text, std::string_view what = "backend");
// Whether this build can run the backend.
bool backend_available(Backend b);

}  // namespace mstar
