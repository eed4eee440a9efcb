#pragma once
// A model's weights on the host, by tensor name, each in the dtype it is
// stored in: read from safetensors or GGUF files into host memory as stored, or
// made by the documented dummy initialisation, and then, for the backend
// that runs them, matrices laid out as its products read them fastest
// (arrange_for). A family asks for the dtype it computes in (ModelParams),
// and only then is a tensor converted.
//
// The dummy initialisation (documented so a test can rebuild it): element i
// of tensor `name` is scale * u, with u uniform in [-1, 1) given by
// splitmix64(fnv1a64(name) ^ (seed * 0x9E3779B97F4A7C15) + i), taking the top
// 24 bits; scale is 1 / sqrt(fan_in) for a tensor of rank 2 or more ([out,
// in]: fan_in = in, its last dimension), and 1-D tensors (norms) are exactly
// 1. Made in f32.
#include <cstdint>
#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include "kernels/backend.h"
#include "core/buffer.h"
#include "core/dtype.h"
#include "core/progress.h"
#include "models/tensors.h"
#include "kernels/weight_layout.h"

namespace mstar {

struct WeightTensor {
  DType dtype = DType::f32;
  std::vector<int64_t> shape;
  const void* data = nullptr;  // host memory, owned by the Weights
  std::size_t bytes = 0;
  bool matrix = false;         // as its TensorSpec says
  kernels::WeightLayout layout = kernels::WeightLayout::rows;  // rows but for matrices (arrange_for)
};

class Weights {
 public:
  static Weights dummy(const std::vector<TensorSpec>& specs, uint64_t seed);
  // The tensors `specs` names, from safetensors `files` (several for a
  // sharded model) or one GGUF file (models/stored_tensors.h: its names
  // mapped, llama's rotary rows restored), read into host memory as stored.
  // Throws InputError naming the file and the tensor: missing, unexpected,
  // of a dtype mstar has no row for, of another shape, holding the wrong
  // number of bytes, or holding a NaN or an infinity (every value is
  // checked once, at load).
  // `progress` hears the bytes read after each tensor.
  static Weights load(const std::vector<std::filesystem::path>& files, const std::vector<TensorSpec>& specs,
                      const Progress& progress = {});

  // Lays every matrix out as backend b's products read it fastest
  // (kernels::matmul_layout), in place: the cpu backend's pair panels for
  // bf16 on AVX-512 without AMX, rows elsewhere (and back to rows for a
  // backend that reads rows).
  void arrange_for(Backend b);
  // Lays every matrix out as `layout` where it fits (kernels::layout_fits),
  // else rows, whatever backend will run them: the host backends read any
  // layout, so a test or a benchmark can take one a processor would not.
  void arrange(kernels::WeightLayout layout);

  const WeightTensor& get(const std::string& name) const;
  bool has(const std::string& name) const { return tensors_.count(name) != 0; }
  const std::map<std::string, WeightTensor>& all() const { return tensors_; }
  // Bytes of every tensor as stored.
  std::size_t bytes() const;

 private:
  // Rearranges t, one of these weights' matrices, into `want`, in place.
  static void lay_out(WeightTensor& t, kernels::WeightLayout want);

  std::vector<HostBuffer> owned_;
  std::map<std::string, WeightTensor> tensors_;
};

// t's elements row-major: t.data where it lies so, else a copy made in `copy`.
const void* row_major(const WeightTensor& t, std::vector<unsigned char>& copy);

// The value the dummy initialisation gives element i of a tensor.
float dummy_value(const TensorSpec& t, uint64_t seed, int64_t i);

// Writes the weights named by `specs` to one safetensors file in `dtype`,
// every matrix row-major.
void write_weights(const Weights& w, const std::vector<TensorSpec>& specs, const std::filesystem::path& path,
                   DType dtype);

}  // namespace mstar
