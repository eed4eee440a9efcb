#include "config/checkpoint.h"

#include <fmt/format.h>

#include "core/errors.h"
#include "core/files.h"
#include "core/gguf.h"
#include "core/json_text.h"

namespace mstar {

std::string checkpoint_kind(const std::filesystem::path& in) {
  std::error_code ec;
  if (std::filesystem::is_regular_file(in, ec) && is_gguf(in)) {
    const GgufFile f = read_gguf(in);
    const GgufValue* a = f.find("general.architecture");
    if (!a || a->type != GgufType::string)
      throw InputError(fmt::format("{}: metadata 'general.architecture' is {} (llama or qwen2)", in.string(),
                                   a ? a->describe() : "missing"));
    return a->text;
  }
  if (!std::filesystem::is_directory(in, ec))
    throw InputError(fmt::format("{}: neither a checkpoint folder (with config.json) nor a GGUF file", in.string()));
  const std::filesystem::path config = in / "config.json";
  const nlohmann::json j = parse_json(read_regular_file(config, kMiB, config.string()), config.string(), 16);
  if (!j.is_object() || !j.contains("model_type") || !j["model_type"].is_string())
    throw InputError(fmt::format("{}: model_type: expected llama or qwen2", config.string()));
  return j["model_type"].get<std::string>();
}

Checkpoint read_checkpoint(const std::filesystem::path& checkpoint, const std::string& what) {
  const std::string kind = checkpoint_kind(checkpoint);
  Checkpoint c;
  c.family = find_family(kind);
  if (!c.family || !c.family->from_checkpoint)
    throw InputError(
        fmt::format("{} {}: '{}' is not a checkpoint family (llama or qwen2)", what, checkpoint.string(), kind));
  std::string errors;
  ArchitectureInput in;
  in.checkpoint = checkpoint;
  in.error = [&](const std::string& e) { errors += (errors.empty() ? "" : "\n") + e; };
  std::unique_ptr<Architecture> arch = c.family->read_architecture(in);
  if (!arch) throw InputError(errors);
  auto* h = dynamic_cast<HfArchitecture*>(arch.get());
  MSTAR_ASSERT(h, "a checkpoint family's architecture is an HfArchitecture");
  arch.release();
  c.arch.reset(h);
  return c;
}

}  // namespace mstar
