#pragma once
// The norm block: RMS norm (the llama and qwen2 families', mstar's own) or
// layer norm, over rows of one width, with its weight and, for a layer norm
// that has one, its bias, in the backend's memory.
#include <cstdint>

#include "kernels/backend.h"

namespace mstar {

enum class NormKind : unsigned char {
  rms,    // x / sqrt(mean(x^2) + eps) * w
  layer,  // (x - mean) / sqrt(var + eps) * w (+ bias)
};
const char* norm_name(NormKind k);  // "rms", "layer"

struct NormSpec {
  NormKind kind = NormKind::rms;
  double eps = 1e-6;
  bool bias = false;  // layer norm: adds a bias tensor
};

class Norm {
 public:
  Norm() = default;
  // weight [width] (required), bias [width] or null: backend memory that
  // outlives the block.
  Norm(const NormSpec& spec, int64_t width, const float* weight, const float* bias, Backend backend, int threads);
  // out[rows, width] = the norm of x[rows, width]; out may be x.
  void run(const float* x, int64_t rows, float* out) const;

 private:
  NormSpec spec_;
  int64_t width_ = 0;
  const float* weight_ = nullptr;
  const float* bias_ = nullptr;
  Backend backend_ = Backend::cpu;
  int threads_ = 1;
};

}  // namespace mstar
