#include "resources/resource_set.h"

#include <fmt/format.h>

#include "core/errors.h"

namespace mstar {

ResourceSet::ResourceSet(const std::vector<SpecRef>& specs, const ResourceOptions& options) {
  for (const SpecRef& spec : specs) {
    std::unique_ptr<Resource> r = spec->build(options);
    const std::vector<int64_t> layers = spec->served_layers();
    for (size_t i = 0; i < layers.size(); ++i) {
      const int64_t l = layers[i];
      if (l < 0) throw ConfigError(fmt::format("resource '{}': negative layer {}", r->key(), l));
      if (static_cast<int64_t>(routes_.size()) <= l) routes_.resize(static_cast<size_t>(l + 1));
      Route& route = routes_[static_cast<size_t>(l)];
      if (route.resource)
        throw ConfigError(fmt::format("resource '{}': layer {} is already served by resource '{}'", r->key(), l,
                                      route.resource->key()));
      route = {r.get(), static_cast<int64_t>(i)};
    }
    resources_.push_back(std::move(r));
  }
}

void ResourceSet::ingest_request(const std::string& rid) {
  for (auto& r : resources_) r->ingest_request(rid);
}

AdmitOutcome ResourceSet::admit(const Step& step, const StepContext& ctx) {
  for (const auto& r : resources_) {
    AdmitOutcome out = r->check(step, ctx);
    if (!out.ok()) return out;
  }
  for (auto& r : resources_) r->claim(step, ctx);
  return AdmitOutcome::accept();
}

void ResourceSet::plan(const Step& step, const StepContext& ctx) {
  for (auto& r : resources_) r->plan(step, ctx);
}

void ResourceSet::commit(const Step& step, const StepContext& ctx) {
  for (auto& r : resources_) r->commit(step, ctx);
}

void ResourceSet::reset_request(const std::string& rid, OnReset what) {
  for (auto& r : resources_) r->reset_request(rid, what);
}

void ResourceSet::remove_request(const std::string& rid) {
  for (auto& r : resources_) r->remove_request(rid);
}

std::vector<RequestState> ResourceSet::save(const std::string& rid) const {
  std::vector<RequestState> out;
  bool claimed = false;
  for (const auto& r : resources_) {
    claimed = claimed || r->holds_claim(rid);
    out.push_back(r->save(rid));
  }
  if (!claimed) out.clear();
  return out;
}

void ResourceSet::restore_position(const std::string& rid, const std::vector<RequestState>& states) {
  if (states.empty()) return;  // nothing committed: the request starts fresh
  if (states.size() != resources_.size())
    throw InputError(fmt::format("resources: a state for {} resources, but this model has {}", states.size(),
                                 resources_.size()));
  for (size_t i = 0; i < resources_.size(); ++i) {
    MSTAR_ASSERT(states[i], "a saved state per resource");
    resources_[i]->restore_position(rid, *states[i]);
  }
}

void ResourceSet::load(const std::string& rid, const std::vector<RequestState>& states) {
  if (states.empty()) return;
  if (states.size() != resources_.size())
    throw InputError(fmt::format("resources: a state for {} resources, but this model has {}", states.size(),
                                 resources_.size()));
  for (size_t i = 0; i < resources_.size(); ++i) {
    MSTAR_ASSERT(states[i], "a saved state per resource");
    resources_[i]->load(rid, *states[i]);
  }
}

std::size_t ResourceSet::memory_bytes() const {
  std::size_t b = 0;
  for (const auto& r : resources_) b += r->memory_bytes();
  return b;
}

std::pair<AttentionMemory&, int64_t> ResourceSet::attention(int64_t layer) {
  if (layer < 0 || layer >= static_cast<int64_t>(routes_.size()) || !routes_[static_cast<size_t>(layer)].resource)
    throw InputError(fmt::format("resources: no resource serves layer {}", layer));
  const Route& r = routes_[static_cast<size_t>(layer)];
  auto* memory = dynamic_cast<AttentionMemory*>(r.resource);
  if (!memory)
    throw InputError(fmt::format("resources: layer {} is served by {} resource '{}', which holds no attention memory",
                                 layer, r.resource->type(), r.resource->key()));
  return {*memory, r.local};
}

void ResourceSet::register_source(int id, int64_t len) {
  for (auto& r : resources_)
    if (auto* memory = dynamic_cast<AttentionMemory*>(r.get()); memory && memory->holds_sources())
      memory->register_source(id, len);
}

}  // namespace mstar
