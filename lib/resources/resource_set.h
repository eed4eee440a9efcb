#pragma once
// Every resource a model declares, driven as one: a step is admitted by all
// of them or by none (each checks it, purely, before any claims), and each of
// the model's attention layers is routed to the resource that serves it.
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "resources/attention_memory.h"
#include "resources/options.h"
#include "resources/resource.h"
#include "resources/resource_spec.h"

namespace mstar {

class ResourceSet {
 public:
  // Builds every resource (ConfigError for a bad spec or two resources
  // serving one layer).
  ResourceSet(const std::vector<SpecRef>& specs, const ResourceOptions& options);

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
  std::vector<RequestState> save(const std::string& rid) const;
  // A restored request, before its first step: its positions in every
  // resource (one state each, of its type), so its first step is checked
  // against them. InputError, naming the resource, when a state does not fit;
  // resources before it may have set theirs, so the caller removes the
  // request.
  void restore_position(const std::string& rid, const std::vector<RequestState>& states);
  // After the step that admitted it claimed its slots and sessions: its
  // entries and positions.
  void load(const std::string& rid, const std::vector<RequestState>& states);

 private:
  struct Route {
    Resource* resource = nullptr;
    int64_t local = 0;
  };
  std::vector<std::unique_ptr<Resource>> resources_;
  std::vector<Route> routes_;  // [model layers]
};

}  // namespace mstar
