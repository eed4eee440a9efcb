#pragma once
// A model's weights in f32 on the host, by tensor name.
//
// The dummy initialisation (documented so a test can rebuild it): element i
// of tensor `name` is scale * u, with u uniform in [-1, 1) given by
// splitmix64(fnv1a64(name) ^ (seed * 0x9E3779B97F4A7C15) + i), taking the top
// 24 bits; scale is 1 / sqrt(fan_in) for a matrix ([out, in]: fan_in = in)
// and norms (1-D tensors) are exactly 1.
#include <cstdint>
#include <map>
#include <string>

#include "core/buffer.h"
#include "models/manifest.h"
#include "models/tensors.h"

namespace mstar {

class Weights {
 public:
  // The manifest's weights: the dummy initialisation or its safetensors
  // file, read through a memory map. Throws InputError naming the tensor
  // (missing, wrong dtype, wrong shape) or the file.
  static Weights from_manifest(const ModelManifest& m);
  static Weights dummy(ModelKind kind, const Architecture& arch, uint64_t seed);
  static Weights load_safetensors(const std::filesystem::path& file, ModelKind kind, const Architecture& arch);

  // The tensor's f32 data. The name must be one of expected_tensors().
  const float* get(const std::string& name) const;
  const std::map<std::string, HostBuffer>& all() const { return tensors_; }
  std::size_t bytes() const;

 private:
  std::map<std::string, HostBuffer> tensors_;  // each [shape...] f32
};

// Writes the weights to a safetensors file in `dtype`, with the tensor names
// and shapes the architecture expects.
void write_weights(const Weights& w, ModelKind kind, const Architecture& arch, const std::filesystem::path& path,
                   DType dtype);

// The value the dummy initialisation gives element i of a tensor.
float dummy_value(const TensorSpec& t, uint64_t seed, int64_t i);

}  // namespace mstar
