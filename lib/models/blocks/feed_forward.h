#pragma once
// The feed-forward block's form: gated, down(act(gate(h)) * up(h)) (SwiGLU
// when act is SiLU: llama, qwen2, mstar's own), or plain, down(act(up(h)))
// (GPT-2's and most encoders' MLP). The trunk runs its products; the
// activation is one kernel op (kernels::silu_mul for SwiGLU, else
// kernels::activate).
#include "kernels/ops.h"

namespace mstar {

struct FeedForwardSpec {
  bool gated = true;
  kernels::Activation act = kernels::Activation::silu;
};

}  // namespace mstar
