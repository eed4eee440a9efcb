#pragma once
// Which implementation runs the kernels. `reference` is plain loops, the
// oracle every other backend is tested against; `cpu` is the fast default;
// `cuda` exists in builds where nvcc was found and runs where a GPU is.
#include <string>
#include <string_view>

#include "core/allocator.h"

namespace mstar {

enum class Backend : unsigned char { reference, cpu, cuda };
inline constexpr Backend kBackends[] = {Backend::reference, Backend::cpu, Backend::cuda};

std::string_view to_string(Backend b);
// Throws ConfigError naming `what` and the text.
Backend parse_backend(std::string_view text, std::string_view what = "backend");
// Whether this build has the backend and, for a device, whether one is
// visible now; when not, `why` (if given) says which.
bool backend_available(Backend b, std::string* why = nullptr);
// Where the backend's buffers come from.
Allocator& allocator_for(Backend b);
// Waits until every op enqueued on the backend has finished (a no-op on the
// host, where ops finish before they return): for timing and for reading
// results back.
void synchronize(Backend b);

}  // namespace mstar
