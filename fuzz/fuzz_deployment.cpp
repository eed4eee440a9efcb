// Deployment YAML (configs/*.yaml) through load_deployment, as mstar-check
// and mstar-run read it, then the memory plan as mstar-check prints it.
#include "common.h"
#include "config/memory_plan.h"
#include "core/json_text.h"
#include "engine/program.h"

using namespace mstar;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  // The file sits in a configs/ folder beside the shipped models, so the
  // shipped configs (the corpus seeds) resolve as they do in the tree.
  static const fs::path dir = [] {
    fs::create_directories(fuzz::scratch() / "configs");
    fuzz::link(fuzz::source_dir() / "models", fuzz::scratch() / "models");
    return fuzz::scratch() / "configs";
  }();
  fuzz::write(dir / "fuzz.yaml", data, size);
  Diagnostics diags;
  if (auto r = load_deployment(dir / "fuzz.yaml", {}, diags)) {
    const nlohmann::json plan = memory_plan_json(*r);
    (void)dump_json(plan, 2);
    (void)memory_plan_text(plan);
  }
  (void)diags.str();
  return 0;
}
