#pragma once
// Classifier-free guidance: a guided stream runs two rows, conditioned (its
// voice) and unconditioned (pad tokens), and draws from
//   uncond + scale * (cond - uncond),
// computed in f32 per entry. Scale 1 gives the conditioned logits back; 0
// the unconditioned ones.
#include <span>
#include <vector>

namespace mstar {

// The guided logits of one stream into `out` (resized to cond's size, and
// kept by the caller so a step allocates nothing); cond and uncond are one
// vocabulary each.
std::span<const float> guide(std::span<const float> cond, std::span<const float> uncond, double scale,
                             std::vector<float>& out);

}  // namespace mstar
