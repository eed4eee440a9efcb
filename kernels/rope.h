#pragma once
// Rotary position embedding: the one convention in mstar, shared by kernels
// and models. Pairs are (i, i + D/2) of a D-vector (the "rotate half" form).
// Angles are computed in double from the position itself, so no table
// bounds how long a stream may run.
#include <cstdint>
#include <vector>

namespace mstar {

// inv_freq[i] = theta^(-2i / dims), i < dims / 2.
std::vector<float> rope_inv_freq(int32_t dims, double theta);
// Rotates x ([D]) to position pos.
void rotate_half(float* x, int32_t D, double pos, const float* inv_freq);
// Rotates the pairs (offset + i, offset + half + i), i < count, of x by pos:
// one axis of a multi-axis (time, height, width) rotary split.
void rotate_pairs(float* x, int32_t offset, int32_t half, int32_t count, double pos, const float* inv_freq);

}  // namespace mstar
