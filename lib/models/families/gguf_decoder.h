#pragma once
// The llama and qwen2 families read from one GGUF file instead of a Hugging
// Face folder: the architecture from the file's metadata (docs/gguf.md,
// "Metadata"), the tensors under the Hugging Face names (stored_tensors.h),
// so the model built over them is the same as from the folder.
#include <filesystem>
#include <functional>
#include <memory>
#include <string>

#include "models/families/hf_decoder.h"

namespace mstar {

// Reads the architecture of the GGUF file `path` for `kind`; every problem
// goes to `error`, naming the file, the key and the value. Null when there
// was any.
std::unique_ptr<HfArchitecture> read_gguf_architecture(const HfDecoderKind& kind, const std::filesystem::path& path,
                                                       const std::string& positions,
                                                       const std::function<void(const std::string&)>& error);

}  // namespace mstar
