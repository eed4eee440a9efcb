#pragma once
// Which family a checkpoint is, from the checkpoint itself: a GGUF file's
// general.architecture, or a Hugging Face folder's config.json model_type.
#include <filesystem>
#include <string>

namespace mstar {

// Throws InputError naming the file when it says none.
std::string checkpoint_kind(const std::filesystem::path& checkpoint);

}  // namespace mstar
