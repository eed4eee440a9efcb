#pragma once
// A resource before it is built, and a request's saved state in one, in one
// vocabulary whichever type it is (bounded KV, ring KV, or a type registered
// later): what the manifest reader, the deployment's overrides, the memory
// plan, snapshots and the speech program ask of a resource, so none of them
// names a type. A type's folder under lib/resources implements both
// interfaces; lib/config/resource_types.h registers its manifest reader.
#include <concepts>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "core/buffer.h"
#include "core/errors.h"
#include "core/dtype.h"
#include "core/shape.h"
#include "resources/options.h"
#include "resources/resource.h"

namespace mstar {

// One request's state in one resource: what a snapshot keeps of it. States
// hold buffers, so they copy only when asked (copy()).
class ResourceState {
 public:
  virtual ~ResourceState() = default;
  virtual std::unique_ptr<ResourceState> copy() const = 0;
  // Per layer: the request's entries in the cache dtype, shaped as the
  // spec's state_shapes() say; empty for a request that committed nothing.
  virtual const std::vector<HostBuffer>& sections() const = 0;
  // The positions and flags beside the sections, as the spec reads them back.
  virtual nlohmann::json fields() const = 0;
};
using RequestState = std::unique_ptr<ResourceState>;

std::vector<RequestState> copy_states(const std::vector<RequestState>& states);

// `state` as the resource's own state type, or InputError naming both.
template <class State>
const State& state_as(const Resource& r, const ResourceState& state) {
  if (const auto* s = dynamic_cast<const State*>(&state)) return *s;
  throw InputError(fmt::format("resource '{}' is {}, but the state given for it is of another type", r.key(), r.type()));
}

// A spec's served layers: `layers` as declared, or 0 .. num_layers - 1 when
// it declares none (a standalone config, a replay trace's).
std::vector<int64_t> layers_or_all(const std::vector<int64_t>& layers, int64_t num_layers);

// What one step of a request may be, as a resource takes it. A resource
// that holds no sources leaves the defaults (no limit).
struct SourceLimits {
  int64_t min_len = 1;  // the shortest source (a voice's prompt)
  int64_t max_len = INT64_MAX;
  int64_t query_window = INT64_MAX;  // the most entries one step writes for one request
};

class ResourceSpec {
 public:
  virtual ~ResourceSpec() = default;
  virtual std::unique_ptr<ResourceSpec> copy() const = 0;
  virtual std::string_view type() const = 0;  // the registered name: "bounded_kv", "ring_kv"
  // The name a deployment's resources.<key> block tunes it by.
  virtual const std::string& key() const = 0;
  // The model layers it serves (its `layers`, or 0 .. num_layers - 1).
  virtual std::vector<int64_t> served_layers() const = 0;

  // Throws ConfigError naming `where`, the field and the value.
  virtual void validate(std::string_view where) const = 0;
  // Validates and allocates (ConfigError, naming the bytes, when the
  // options cannot run or the storage cannot fit).
  virtual std::unique_ptr<Resource> build(const ResourceOptions& options) const = 0;

  // The cache dtype; a deployment's kv_dtype sets it for every resource.
  virtual DType dtype() const = 0;
  virtual void set_dtype(DType d) = 0;
  // The one field a deployment may tune (how many requests are resident:
  // "max_slots", "num_sessions"); the rest of the geometry is a fact of the
  // model's checkpoint.
  virtual std::string_view pool_field() const = 0;
  virtual int64_t pool_size() const = 0;
  virtual void set_pool_size(int64_t n) = 0;
  // Batch rows each request owns in every step (2: classifier-free guidance).
  virtual int64_t rows_per_request() const { return 1; }
  virtual SourceLimits source_limits() const { return {}; }

  // Its declared fields as JSON (what fingerprints and the plan print).
  virtual nlohmann::json config_json() const = 0;
  // Bytes it holds once built, with one source per entry of `source_lens`
  // (a resource that holds none ignores them); UINT64_MAX past 2^64.
  virtual uint64_t bytes(std::span<const int64_t> source_lens) const = 0;
  // mstar-check's entry for it: key, type, config, total_bytes (= bytes())
  // and whatever the type adds.
  virtual nlohmann::json plan_json(std::span<const int64_t> source_lens) const = 0;

  // Snapshots. The shapes of one request's sections, layer by layer.
  virtual std::vector<Shape> state_shapes() const = 0;
  // Checks a saved state's fields (a file anyone can write: InputError
  // naming `where`, the field and the value), then builds the state from
  // them and the sections already checked against state_shapes().
  virtual void check_state_fields(const nlohmann::json& fields, const std::string& where) const = 0;
  virtual RequestState make_state(const nlohmann::json& fields, std::vector<HostBuffer> sections) const = 0;
};

// A spec of any type, held by value: copies share one immutable spec; a
// change is a copy of the spec, changed, put in its place.
class SpecRef {
 public:
  template <class S>
    requires std::derived_from<S, ResourceSpec>
  SpecRef(S spec)  // NOLINT: any spec is a SpecRef
      : p_(std::make_shared<const S>(std::move(spec))) {}
  explicit SpecRef(std::unique_ptr<ResourceSpec> p) : p_(std::move(p)) {}

  const ResourceSpec& operator*() const { return *p_; }
  const ResourceSpec* operator->() const { return p_.get(); }
  // The spec as type S, or nullptr: for code about one type (its bench,
  // its replay), never for code that serves every type.
  template <class S>
  const S* as() const {
    return dynamic_cast<const S*>(p_.get());
  }

 private:
  std::shared_ptr<const ResourceSpec> p_;
};

}  // namespace mstar
