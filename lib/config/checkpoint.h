#pragma once
// A checkpoint read without a manifest (mstar-quantize, --model PATH): which
// family it is, from the checkpoint itself (a GGUF file's
// general.architecture, a Hugging Face folder's config.json model_type),
// and its architecture, as a manifest naming it would read them.
#include <filesystem>
#include <memory>
#include <string>

#include "models/families/hf_decoder.h"
#include "models/family.h"

namespace mstar {

// Throws InputError naming the file when it says none.
std::string checkpoint_kind(const std::filesystem::path& checkpoint);

struct Checkpoint {
  const ModelFamily* family = nullptr;
  std::unique_ptr<HfArchitecture> arch;
};

// The family (llama or qwen2) and architecture of `checkpoint`. Throws
// InputError naming `what` and the file: a family that is no checkpoint
// family, or every problem of the architecture.
Checkpoint read_checkpoint(const std::filesystem::path& checkpoint, const std::string& what);

}  // namespace mstar
