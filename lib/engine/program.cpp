#include "engine/program.h"

#include <fmt/format.h>

#include "engine/frame_program.h"
#include "engine/speech_program.h"

namespace mstar {

namespace {

const std::vector<ProgramKind>& registry() {
  static const std::vector<ProgramKind> programs = [] {
    std::vector<ProgramKind> p;
    p.push_back(speech_program());
    p.push_back(frame_program());
    return p;
  }();
  return programs;
}

}  // namespace

const ProgramKind* find_program(std::string_view task) {
  for (const ProgramKind& p : registry())
    if (p.task == task) return &p;
  return nullptr;
}

std::optional<nlohmann::json> read_workload(const YAML::Node& block, YamlContext& ctx, const ModelManifest& model,
                                            const std::filesystem::path& config_dir) {
  const ProgramKind* p = find_program(model.family->task);
  MSTAR_ASSERT(p, fmt::format("family '{}' names task '{}', which no program serves", model.family->name,
                              model.family->task));
  return p->read_workload(block, ctx, model, config_dir);
}

}  // namespace mstar

namespace mstar {

std::optional<ResolvedDeployment> load_deployment(const std::filesystem::path& path,
                                                  const std::vector<SetOverride>& sets, Diagnostics& diags) {
  return resolve_deployment(path, sets, diags, read_workload);
}

}  // namespace mstar
