#pragma once
// The ring KV resource: per-layer rings holding num_sessions resident
// sessions (one per request) plus the padding session, and attention through
// them. Bookkeeping lives in RingBook; this class owns the rings.
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "backend.h"
#include "resources/resource.h"
#include "resources/ring_kv/book.h"
#include "resources/ring_kv/config.h"
#include "resources/ring_kv/layer_cache.h"

namespace mstar {

struct RingKVOptions {
  Backend backend = Backend::cpu;
  int threads = 1;
};

// One session in every layer, with its clock: a copy the caller may hold
// across further frames that overwrite the rings in place.
struct RingSessionState {
  std::vector<RingLayerState> layers;
  std::optional<int64_t> next_frame;
};

class RingKVManager final : public StepResource<RingKVStep, RingPlan> {
 public:
  RingKVManager(const RingKVSpec& spec, RingKVOptions options);

  const RingKVConfig& config() const { return spec_.config; }
  int64_t num_sessions() const { return spec_.config.num_sessions; }
  int64_t tokens_per_frame() const { return spec_.config.tokens_per_frame; }
  int64_t capacity(int64_t layer) const { return layer_at(layer).capacity(); }
  int64_t total_slots(int64_t layer) const { return layer_at(layer).total_slots(); }
  std::optional<int32_t> session_of(const std::string& rid) const;
  const RingBook& book() const { return book_; }
  const LayerRingCache& layer(int64_t l) const { return layer_at(l); }

  void ingest_request(const std::string& rid) override { book_.ingest(rid); }
  AdmitOutcome admit(const RingKVStep& step, const StepContext& ctx) override { return book_.admit(step, ctx); }
  RingPlan plan(const RingKVStep& step, const StepContext& ctx) const override { return book_.plan(step, ctx); }
  // Records each request's clock; metadata only.
  void commit(const RingKVStep& step, const StepContext& ctx) override { book_.commit(step, ctx); }
  // Zeroes the request's session in every layer and releases it; the clock
  // starts over. The ring has no physical allocation to hand back, so both
  // OnReset values release.
  void reset_request(const std::string& rid, OnReset what) override;
  void remove_request(const std::string& rid) override;

  // Writes one frame per row at `layer` (k, v: [B, H_kv, T, D] f32; frame_pos
  // [B]) and returns what to attend to.
  RingUpsert upsert(int64_t layer, const RingPlan& plan, ConstTensorView k, ConstTensorView v,
                    std::span<const int64_t> frame_pos, const UpsertOptions& options);
  // Each row's queries (q: [B * T, Hq, D]) over the slots its visibility row
  // marks. `up` must come from upsert at the same layer, with visibility.
  void attend(int64_t layer, const RingUpsert& up, ConstTensorView q, TensorView out,
              std::optional<float> scale = std::nullopt) const;

  RingSessionState get_state(const std::string& rid) const;
  // Restores into the request's session; a state of another geometry is
  // refused with the layer and the shapes, before anything is written.
  void load_state(const std::string& rid, const RingSessionState& state);

  // Throws StateError naming the layer and session when a session no request
  // holds is not as reset left it (the padding session excepted).
  void post_warmup_validate() const;

  std::size_t memory_bytes() const override;

 private:
  const LayerRingCache& layer_at(int64_t l) const;
  int32_t held_session(const std::string& rid, const char* op) const;

  RingKVSpec spec_;
  RingKVOptions options_;
  RingBook book_;
  std::vector<LayerRingCache> layers_;
};

}  // namespace mstar
