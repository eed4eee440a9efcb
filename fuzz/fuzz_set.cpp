// --set overrides: each line of the input is one "dotted.key=value"
// argument, applied to a shipped deployment as mstar-check and mstar-run do.
#include <sstream>

#include "common.h"
#include "config/memory_plan.h"
#include "core/errors.h"
#include "core/json_text.h"
#include "engine/program.h"

using namespace mstar;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  static const char* configs[] = {"configs/tts-demo.yaml", "configs/world-demo.yaml", "configs/hf-demo.yaml"};
  const fs::path config = fuzz::source_dir() / configs[data[0] % 3];
  std::istringstream in(std::string(reinterpret_cast<const char*>(data) + 1, size - 1));
  std::vector<SetOverride> sets;
  for (std::string line; std::getline(in, line) && sets.size() < 16;) {
    try {
      sets.push_back(parse_set(line));
    } catch (const ConfigError&) {
      // A usage error: the programs stop here with exit 2.
    }
  }
  Diagnostics diags;
  if (auto r = load_deployment(config, sets, diags)) (void)dump_json(memory_plan_json(*r));
  (void)diags.str();
  return 0;
}
