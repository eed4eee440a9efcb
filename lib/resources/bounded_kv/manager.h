#pragma once
// The bounded KV resource: a fixed pool of slots per layer, the registered
// sources, and attention through both. Bookkeeping lives in BoundedKVBook;
// this class owns the buffers and calls the kernels.
#include <map>
#include <optional>
#include <span>
#include <vector>

#include "backend.h"
#include "bounded_attention.h"
#include "core/buffer.h"
#include "resources/bounded_kv/book.h"
#include "resources/bounded_kv/config.h"
#include "resources/resource.h"

namespace mstar {

struct BoundedKVOptions {
  Backend backend = Backend::cpu;
  int threads = 1;
};

// One layer's attention inputs for a planned step. Rows follow the step
// context; row r's queries are q[q_indptr[r], q_indptr[r+1]) and its step
// entries k/v[plan.kv_indptr[r], plan.kv_indptr[r+1]) (its span; padding
// rows have none).
struct BoundedAttendArgs {
  ConstTensorView q;               // [total_q, Hq, D] f32
  std::span<const int32_t> q_indptr;  // [rows + 1]
  ConstTensorView k;               // [total_kv, H, D] f32
  ConstTensorView v;               // [total_kv, H, D] f32
  TensorView out;                  // [total_q, Hq, D] f32
  kernels::StepMask mask = kernels::StepMask::full;
  std::optional<float> scale;      // default 1/sqrt(head_dim)
  // Rotary positions inside the retained cache: keys are stored unrotated
  // and rotated on read by their ordinal in the row's visible sequence; the
  // caller rotates q to its ordinal. Empty: keys were stored rotated.
  std::span<const float> rope_inv_freq;  // [head_dim / 2]
};

class BoundedKVManager final : public StepResource<BoundedKVStep, BoundedKVPlan> {
 public:
  // Validates the spec (ConfigError) and allocates every layer's pool.
  BoundedKVManager(const BoundedKVSpec& spec, BoundedKVOptions options);

  const BoundedKVConfig& config() const { return spec_.config; }
  const BoundedKVSpec& spec() const { return spec_; }
  const BoundedKVBook& book() const { return book_; }
  Backend backend() const { return options_.backend; }

  // Registers a read-only source: keys and values of every layer and row,
  // each [num_layers, rows_per_request, H, len, D] f32, stored once in the
  // cache dtype. Attention reads it in place.
  void register_source(int id, ConstTensorView keys, ConstTensorView values);
  void remove_source(int id);

  void ingest_request(const std::string& rid) override { book_.ingest(rid); }
  AdmitOutcome admit(const BoundedKVStep& step, const StepContext& ctx) override { return book_.admit(step, ctx); }
  BoundedKVPlan plan(const BoundedKVStep& step, const StepContext& ctx) const override {
    return book_.plan(step, ctx);
  }
  void commit(const BoundedKVStep& step, const StepContext& ctx) override { book_.commit(step, ctx); }
  void reset_request(const std::string& rid, OnReset what) override { book_.reset(rid, what); }
  void remove_request(const std::string& rid) override { book_.remove(rid); }

  // Attention for every row of a planned step at `layer` over its retained
  // entries plus the step's own, then the step's entries are stored per the
  // plan. Throws InputError on shapes that do not match the plan.
  void attend(int64_t layer, const BoundedKVPlan& plan, const BoundedAttendArgs& args);

  // Slot pool plus registered sources, in bytes. The pool is fixed at build;
  // only registering or removing a source changes the total.
  std::size_t memory_bytes() const override { return pool_bytes() + source_bytes(); }
  std::size_t pool_bytes() const;
  std::size_t source_bytes() const;

 private:
  BoundedKVSpec spec_;
  BoundedKVOptions options_;
  BoundedKVBook book_;
  std::vector<HostBuffer> layers_;     // per layer: [max_slots, R, H, slot_tokens, 2D]
  std::map<int, HostBuffer> sources_;  // per source: [num_layers, R, H, len, 2D]
};

}  // namespace mstar
