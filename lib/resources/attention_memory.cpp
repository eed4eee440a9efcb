#include "resources/attention_memory.h"

#include <fmt/format.h>

#include "core/errors.h"

namespace mstar {

void AttentionMemory::register_source(int id, int64_t /*len*/) {
  throw InputError(fmt::format("register_source {}: this resource holds no sources", id));
}

void AttentionMemory::prefill_source(int id, int64_t /*layer*/, int64_t /*row*/, const LayerPass& /*pass*/) {
  throw InputError(fmt::format("prefill_source {}: this resource holds no sources", id));
}

void AttentionMemory::remove_source(int id) {
  throw InputError(fmt::format("remove_source {}: this resource holds no sources", id));
}

}  // namespace mstar
