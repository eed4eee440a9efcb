#pragma once
// Llama decoders from a Hugging Face folder (Llama 2 and 3, and the speech
// models trained on them such as Orpheus): RMSNorm, SwiGLU, rotary positions
// with default, linear or llama3 scaling, no biases (docs/hf-decoders.md).
#include "models/family.h"

namespace mstar {

ModelFamily llama_family();

}  // namespace mstar
