#include "models/families/qwen2.h"

#include "models/families/hf_decoder.h"

namespace mstar {

ModelFamily qwen2_family() { return hf_family({"qwen2", true, {}}); }

}  // namespace mstar
