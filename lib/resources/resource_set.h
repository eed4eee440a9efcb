#pragma once
// Every resource a model declares, driven as one: a step is admitted by all
// of them or by none (each checks it, purely, before any claims), and each of
// the model's attention layers is routed to the resource that serves it.
#include <memory>
#include <string>
#include <utility>
#include <variant>
#include <vector>

#include <fmt/format.h>

#include "core/errors.h"
#include "resources/attention_memory.h"
#include "resources/bounded_kv/manager.h"
#include "resources/options.h"
#include "resources/resource.h"
#include "resources/ring_kv/manager.h"

namespace mstar {

using ResourceSpec = std::variant<BoundedKVSpec, RingKVSpec>;
// One request's state in one resource (a snapshot's part of it).
using RequestState = std::variant<BoundedRequestState, RingSessionState>;
// States hold buffers, which copy only when asked.
std::vector<RequestState> copy_states(const std::vector<RequestState>& states);

const std::string& resource_key(const ResourceSpec& spec);
// The model layers a spec serves (its `layers`, or 0 .. num_layers - 1).
std::vector<int64_t> served_layers(const ResourceSpec& spec);

class ResourceSet {
 public:
  // Builds every resource (ConfigError for a bad spec or two resources
  // serving one layer).
  ResourceSet(const std::vector<ResourceSpec>& specs, const ResourceOptions& options);

  int64_t size() const { return static_cast<int64_t>(resources_.size()); }
  Resource& at(int64_t i) { return *resources_[static_cast<size_t>(i)]; }
  const Resource& at(int64_t i) const { return *resources_[static_cast<size_t>(i)]; }

  // The attention memory serving model layer `layer`, and the resource's
  // own index for that layer. Throws InputError when no resource serves it,
  // or the one that does is no attention memory.
  std::pair<AttentionMemory&, int64_t> attention(int64_t layer);
  // Registers source `id` of `len` entries with every resource that holds
  // sources; the model then prefills it layer by layer.
  void register_source(int id, int64_t len);

  void ingest_request(const std::string& rid);
  // All or none: the first resource that does not accept the step decides
  // the outcome, and nothing has been claimed anywhere.
  AdmitOutcome admit(const Step& step, const StepContext& ctx);
  void plan(const Step& step, const StepContext& ctx);
  void commit(const Step& step, const StepContext& ctx);
  void reset_request(const std::string& rid, OnReset what);
  void remove_request(const std::string& rid);
  std::size_t memory_bytes() const;

  // A request's state in every resource, in order. A request that holds no
  // claim anywhere has committed nothing, and gets no states.
  std::vector<RequestState> get_state(const std::string& rid) const;
  // A restored request, before its first step: its positions in every
  // resource (one state each, of its type), so its first step is checked
  // against them. InputError, naming the resource, when a state does not fit.
  void restore_position(const std::string& rid, const std::vector<RequestState>& states);
  // After the step that admitted it claimed its slots and sessions: its
  // entries and positions.
  void load_state(const std::string& rid, const std::vector<RequestState>& states);

 private:
  struct Route {
    Resource* resource = nullptr;
    int64_t local = 0;
  };
  std::vector<std::unique_ptr<Resource>> resources_;
  std::vector<Route> routes_;  // [model layers]
};

}  // namespace mstar
