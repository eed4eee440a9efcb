#pragma once
// `--model PATH` (mstar-run, mstar-serve, mstar-check): the deployment one
// model path gives, with the defaults docs/running.md ("One command per
// model") documents, so a user with a checkpoint writes no YAML. PATH is a
// Hugging Face checkpoint folder, a GGUF file or a manifest; `--set` still
// overrides what is chosen here.
#include <filesystem>
#include <string>
#include <vector>

namespace mstar {

// Writes into `dir` the manifest (for a checkpoint) and the deployment for
// `model`, and returns the deployment's path. `chosen` gets one line per
// choice, saying what and why. Throws InputError or ConfigError naming
// `model` when it is none of the three or cannot be read.
std::filesystem::path write_model_deployment(const std::filesystem::path& model, const std::filesystem::path& dir,
                                             std::vector<std::string>& chosen);

}  // namespace mstar
