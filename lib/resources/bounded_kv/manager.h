#pragma once
// The bounded KV resource: the book (which request holds which slot, how far
// each stream is committed, which sources exist) and the storage (slot pools
// and sources in the backend's memory, and the ops over them), kept apart so
// every lifecycle rule is tested without allocating a cache.
#include <optional>
#include <string>
#include <vector>

#include "resources/attention_memory.h"
#include "resources/bounded_kv/book.h"
#include "resources/bounded_kv/config.h"
#include "resources/bounded_kv/storage.h"
#include "resources/options.h"
#include "resources/resource.h"

namespace mstar {

// One request's stream in every layer, with its position: a copy the caller
// may hold while the slot serves others (what a snapshot keeps of it).
struct BoundedRequestState final : ResourceState {
  // Per layer: the slot's retained entries, [R, H, retained_tokens, 2D] in
  // the cache dtype. Empty for a request that has committed nothing.
  std::vector<HostBuffer> kv;
  int64_t written = 0;  // committed entries past the source
  int source = 0;       // the source the stream started on
  int64_t source_len = 0;

  std::unique_ptr<ResourceState> copy() const override;
  const std::vector<HostBuffer>& sections() const override { return kv; }
  nlohmann::json fields() const override;
};

class BoundedKVManager final : public Resource, public AttentionMemory {
 public:
  // Validates the spec (ConfigError) and allocates every layer's pool.
  BoundedKVManager(const BoundedKVSpec& spec, const ResourceOptions& options);

  const BoundedKVConfig& config() const { return spec_.config; }
  const BoundedKVSpec& spec() const { return spec_; }
  const BoundedKVBook& book() const { return book_; }
  const BoundedKVStorage& storage() const { return storage_; }
  Backend backend() const { return options_.backend; }

  std::string_view type() const override { return "bounded_kv"; }
  const std::string& key() const override { return spec_.resource_key; }

  // Sources: a read-only prefix every request naming it reads in place. A
  // source is registered with its length, then each layer's and row's
  // entries are written before any request uses it: given (write_source),
  // or computed by a model's prefill, which stores the entries and attends
  // causally over them (prefill_source: args.q over args.k and args.v).
  bool holds_sources() const override { return true; }
  void register_source(int id, int64_t len) override;
  void write_source(int id, int64_t layer, int64_t row, ConstTensorView k, ConstTensorView v) {
    storage_.write_source(id, layer, row, k, v);
  }
  void prefill_source(int id, int64_t layer, int64_t row, const LayerPass& args) override;
  void remove_source(int id) override;

  void ingest_request(const std::string& rid) override { book_.ingest(rid); }
  AdmitOutcome check(const Step& step, const StepContext& ctx) const override { return book_.check(step, ctx); }
  void claim(const Step& step, const StepContext& ctx) override { book_.claim(step, ctx); }
  void plan(const Step& step, const StepContext& ctx) override;
  // Each row's kept entries move from its scratch into place, then the book
  // advances the streams.
  void commit(const Step& step, const StepContext& ctx) override;
  void reset_request(const std::string& rid, OnReset what) override { book_.reset(rid, what); }
  void remove_request(const std::string& rid) override { book_.remove(rid); }

  // The plan staged by the last plan(); what attend follows.
  const BoundedKVPlan& staged() const { return plan_; }
  // Attention for every row of the staged step at `layer` over its retained
  // entries plus the step's own; the step's kept entries go to the rows'
  // scratch, retained entries are untouched until commit. Throws InputError
  // on shapes that do not match the plan.
  void attend(int64_t layer, const LayerPass& args) override { storage_.attend(layer, args); }
  // Row r's retained entries (source included) in the staged step: its
  // queries' first cache position.
  int64_t seen_before(std::size_t row) const override;

  // The request's state (InputError for an unknown request). A request
  // without a slot has committed nothing: its state holds no entries.
  BoundedRequestState get_state(const std::string& rid) const;
  bool holds_claim(const std::string& rid) const override;
  std::unique_ptr<ResourceState> save(const std::string& rid) const override;
  void restore_position(const std::string& rid, const ResourceState& state) override {
    restore_position(rid, state_as<BoundedRequestState>(*this, state));
  }
  void load(const std::string& rid, const ResourceState& state) override {
    load_state(rid, state_as<BoundedRequestState>(*this, state));
  }
  // Before the request's first step here: its committed position, so that
  // step's declaration is checked against it while it waits for a slot.
  // InputError, and nothing changed, when the position cannot be here.
  void restore_position(const std::string& rid, const BoundedRequestState& state);
  // With the request's slot held: its entries and position. A state of
  // another geometry or dtype is refused with the layer and the shapes,
  // before anything is written.
  void load_state(const std::string& rid, const BoundedRequestState& state);

  // Slot pool plus registered sources, in bytes. The pool is fixed at build;
  // only registering or removing a source changes the total.
  std::size_t memory_bytes() const override { return storage_.pool_bytes() + storage_.source_bytes(); }
  Occupancy occupancy() const override { return {book_.pool().in_use(), book_.pool().size(), "slots"}; }
  int64_t requests() const override { return book_.requests(); }

 private:
  BoundedKVSpec spec_;
  ResourceOptions options_;
  BoundedKVBook book_;
  BoundedKVStorage storage_;
  BoundedKVPlan plan_;
  bool staged_ = false;
};

}  // namespace mstar
