#include "models/families/llama.h"

#include "models/families/hf_decoder.h"

namespace mstar {

ModelFamily llama_family() { return hf_family({"llama", false, {"attention_bias", "mlp_bias"}}); }

}  // namespace mstar
