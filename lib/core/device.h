#pragma once
#include <string_view>

namespace mstar {

// Where a buffer lives. Host buffers are Device::cpu; Device::cuda buffers
// exist only in builds with the CUDA backend.
enum class Device : unsigned char { cpu, cuda };

constexpr std::string_view to_string(Device d) { return d == Device::cpu ? "cpu" : "cuda"; }

}  // namespace mstar
