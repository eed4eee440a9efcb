#include "resources/resource_set.h"

namespace mstar {

const std::string& resource_key(const ResourceSpec& spec) {
  return std::visit([](const auto& s) -> const std::string& { return s.resource_key; }, spec);
}

std::vector<int64_t> served_layers(const ResourceSpec& spec) {
  return std::visit(
      [](const auto& s) {
        if (!s.layers.empty()) return s.layers;
        std::vector<int64_t> all(static_cast<size_t>(s.config.num_layers));
        for (size_t i = 0; i < all.size(); ++i) all[i] = static_cast<int64_t>(i);
        return all;
      },
      spec);
}

ResourceSet::ResourceSet(const std::vector<ResourceSpec>& specs, const ResourceOptions& options) {
  for (const ResourceSpec& spec : specs) {
    std::unique_ptr<Resource> r = std::visit(
        [&](const auto& s) -> std::unique_ptr<Resource> {
          using S = std::decay_t<decltype(s)>;
          if constexpr (std::is_same_v<S, BoundedKVSpec>) return std::make_unique<BoundedKVManager>(s, options);
          else return std::make_unique<RingKVManager>(s, options);
        },
        spec);
    const std::vector<int64_t> layers = served_layers(spec);
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

std::size_t ResourceSet::memory_bytes() const {
  std::size_t b = 0;
  for (const auto& r : resources_) b += r->memory_bytes();
  return b;
}

}  // namespace mstar
