#include "models/blocks/norm.h"

#include "core/errors.h"
#include "kernels/ops.h"

namespace mstar {

const char* norm_name(NormKind k) { return k == NormKind::rms ? "rms" : "layer"; }

Norm::Norm(const NormSpec& spec, int64_t width, const float* weight, const float* bias, Backend backend, int threads)
    : spec_(spec), width_(width), weight_(weight), bias_(bias), backend_(backend), threads_(threads) {
  MSTAR_ASSERT(weight_, "a norm has its weight");
  MSTAR_ASSERT(spec_.kind == NormKind::layer || !bias_, "only a layer norm adds a bias");
}

void Norm::run(const float* x, int64_t rows, float* out) const {
  if (spec_.kind == NormKind::rms)
    kernels::rmsnorm(backend_, {rows, width_, x, weight_, spec_.eps, out, threads_});
  else
    kernels::layer_norm(backend_, {rows, width_, x, weight_, bias_, spec_.eps, out, threads_});
}

}  // namespace mstar
