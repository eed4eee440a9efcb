#pragma once
// Qwen2 decoders from a Hugging Face folder: the Llama trunk with a bias on
// the q, k and v projections (docs/hf-decoders.md).
#include "models/family.h"

namespace mstar {

ModelFamily qwen2_family();

}  // namespace mstar
