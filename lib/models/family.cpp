#include "models/family.h"

#include "models/hf_decoder.h"
#include "models/tts_model.h"
#include "models/world_model.h"

namespace mstar {

namespace {

// Every family, registered once, in the order their names are listed.
const std::vector<ModelFamily>& registry() {
  static const std::vector<ModelFamily> families = [] {
    std::vector<ModelFamily> f;
    f.push_back(tts_family());
    f.push_back(world_family());
    f.push_back(llama_family());
    f.push_back(qwen2_family());
    return f;
  }();
  return families;
}

}  // namespace

const ModelFamily* find_family(std::string_view name) {
  for (const ModelFamily& f : registry())
    if (f.name == name) return &f;
  return nullptr;
}

std::vector<std::string> family_names() {
  std::vector<std::string> names;
  for (const ModelFamily& f : registry()) names.push_back(f.name);
  return names;
}

}  // namespace mstar
