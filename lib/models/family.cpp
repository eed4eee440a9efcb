#include "models/family.h"

#include <deque>
#include <mutex>

#include <fmt/format.h>

#include "core/errors.h"
#include "models/families/llama.h"
#include "models/families/qwen2.h"
#include "models/families/tts.h"
#include "models/families/world.h"

namespace mstar {

namespace {

// Every family, in the order their names are listed: the shipped ones (one
// file each under families/, one line here), then any registered. A deque,
// so a family's address never moves.
struct Registry {
  std::mutex lock;
  std::deque<ModelFamily> families;
};
Registry& registry() {
  // Never destroyed: a family may be looked up while statics are torn down.
  static Registry& r = *new Registry;
  static const bool shipped = [] {
    r.families.push_back(tts_family());
    r.families.push_back(world_family());
    r.families.push_back(llama_family());
    r.families.push_back(qwen2_family());
    return true;
  }();
  (void)shipped;
  return r;
}

}  // namespace

const ModelFamily* find_family(std::string_view name) {
  Registry& r = registry();
  std::lock_guard hold(r.lock);
  for (const ModelFamily& f : r.families)
    if (f.name == name) return &f;
  return nullptr;
}

std::vector<std::string> family_names() {
  Registry& r = registry();
  std::lock_guard hold(r.lock);
  std::vector<std::string> names;
  for (const ModelFamily& f : r.families) names.push_back(f.name);
  return names;
}

void register_family(ModelFamily family) {
  if (family.name.empty() || family.task.empty() || family.resource_type.empty() || !family.read_architecture ||
      !family.make)
    throw ConfigError(fmt::format("family '{}': needs a name, a task, a resource type, a reader and a constructor",
                                  family.name));
  if (find_family(family.name)) throw ConfigError(fmt::format("family '{}' is already registered", family.name));
  Registry& r = registry();
  std::lock_guard hold(r.lock);
  r.families.push_back(std::move(family));
}

}  // namespace mstar
