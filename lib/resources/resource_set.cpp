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

std::vector<RequestState> copy_states(const std::vector<RequestState>& states) {
  std::vector<RequestState> out;
  for (const RequestState& s : states) {
    if (const auto* b = std::get_if<BoundedRequestState>(&s)) {
      BoundedRequestState c{{}, b->written, b->source, b->source_len};
      for (const HostBuffer& h : b->kv) c.kv.push_back(h.copy());
      out.emplace_back(std::move(c));
    } else {
      const auto& r = std::get<RingSessionState>(s);
      RingSessionState c{{}, r.written, r.next_frame};
      for (const HostBuffer& h : r.kv) c.kv.push_back(h.copy());
      out.emplace_back(std::move(c));
    }
  }
  return out;
}

std::vector<RequestState> ResourceSet::get_state(const std::string& rid) const {
  std::vector<RequestState> out;
  bool claimed = false;
  for (const auto& r : resources_) {
    if (const auto* b = dynamic_cast<const BoundedKVManager*>(r.get())) {
      const BoundedRequest* req = b->book().find(rid);
      claimed = claimed || (req && req->slot);
      out.emplace_back(b->get_state(rid));
    } else {
      const auto& ring = dynamic_cast<const RingKVManager&>(*r);
      if (!ring.session_of(rid)) {
        out.emplace_back(RingSessionState{});
        continue;
      }
      claimed = true;
      out.emplace_back(ring.get_state(rid));
    }
  }
  if (!claimed) out.clear();
  return out;
}

namespace {

// The resource's own state type out of a RequestState, or InputError naming both.
template <class State>
const State& state_for(const Resource& r, const RequestState& s) {
  if (const auto* st = std::get_if<State>(&s)) return *st;
  throw InputError(fmt::format("resource '{}' is {}, but the state given for it is of the other kind", r.key(), r.type()));
}

}  // namespace

void ResourceSet::restore_position(const std::string& rid, const std::vector<RequestState>& states) {
  if (states.empty()) return;  // nothing committed: the request starts fresh
  if (states.size() != resources_.size())
    throw InputError(fmt::format("resources: a state for {} resources, but this model has {}", states.size(),
                                 resources_.size()));
  // Every state is checked against its resource first (the positions are
  // the only thing set here, and each setter checks before it sets).
  for (size_t i = 0; i < resources_.size(); ++i) {
    if (auto* b = dynamic_cast<BoundedKVManager*>(resources_[i].get())) state_for<BoundedRequestState>(*b, states[i]);
    else state_for<RingSessionState>(*resources_[i], states[i]);
  }
  for (size_t i = 0; i < resources_.size(); ++i) {
    if (auto* b = dynamic_cast<BoundedKVManager*>(resources_[i].get()))
      b->restore_position(rid, std::get<BoundedRequestState>(states[i]));
    else
      dynamic_cast<RingKVManager&>(*resources_[i]).restore_position(rid, std::get<RingSessionState>(states[i]));
  }
}

void ResourceSet::load_state(const std::string& rid, const std::vector<RequestState>& states) {
  if (states.empty()) return;
  if (states.size() != resources_.size())
    throw InputError(fmt::format("resources: a state for {} resources, but this model has {}", states.size(),
                                 resources_.size()));
  for (size_t i = 0; i < resources_.size(); ++i) {
    if (auto* b = dynamic_cast<BoundedKVManager*>(resources_[i].get())) {
      b->load_state(rid, state_for<BoundedRequestState>(*b, states[i]));
    } else {
      auto& ring = dynamic_cast<RingKVManager&>(*resources_[i]);
      const RingSessionState& st = state_for<RingSessionState>(ring, states[i]);
      if (!st.kv.empty()) ring.load_state(rid, st);
    }
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
