#pragma once
// The ring KV resource: the book (requests, sessions, frame clocks, which
// frame slots hold committed frames) and the storage (per-layer rings in the
// backend's memory, and the ops over them), kept apart so every admission,
// clock and visibility rule is tested without allocating a ring.
#include <optional>
#include <string>
#include <vector>

#include "resources/attention_memory.h"
#include "resources/options.h"
#include "resources/resource.h"
#include "resources/ring_kv/book.h"
#include "resources/ring_kv/config.h"
#include "resources/ring_kv/storage.h"

namespace mstar {

// One session in every layer, with its clock: a copy the caller may hold
// across further frames that overwrite the rings in place.
struct RingSessionState final : ResourceState {
  std::vector<HostBuffer> kv;                 // per layer: [2, H_kv, capacity, D], cache dtype
  std::vector<std::vector<uint8_t>> written;  // per layer: [ring_frames + 1] frame-slot flags
  std::optional<int64_t> next_frame;

  std::unique_ptr<ResourceState> copy() const override;
  const std::vector<HostBuffer>& sections() const override { return kv; }
  nlohmann::json fields() const override;
};

class RingKVManager final : public Resource, public AttentionMemory {
 public:
  RingKVManager(const RingKVSpec& spec, const ResourceOptions& options);

  const RingKVConfig& config() const { return spec_.config; }
  const RingKVSpec& spec() const { return spec_; }
  const RingKVBook& book() const { return book_; }
  int64_t num_sessions() const { return spec_.config.num_sessions; }
  int64_t tokens_per_frame() const { return spec_.config.tokens_per_frame; }
  std::optional<int32_t> session_of(const std::string& rid) const;

  std::string_view type() const override { return "ring_kv"; }
  const std::string& key() const override { return spec_.resource_key; }

  void ingest_request(const std::string& rid) override { book_.ingest(rid); }
  AdmitOutcome check(const Step& step, const StepContext& ctx) const override { return book_.check(step, ctx); }
  void claim(const Step& step, const StepContext& ctx) override { book_.claim(step, ctx); }
  void plan(const Step& step, const StepContext& ctx) override;
  // The clocks follow committed frames only: a step whose passes all left
  // commit off moves nothing, and the next step may declare the same frame.
  void commit(const Step& step, const StepContext& ctx) override;
  // Zeroes the request's session in every layer and releases it; the clock
  // starts over. The ring has no physical allocation to hand back, so both
  // OnReset values release.
  void reset_request(const std::string& rid, OnReset what) override;
  void remove_request(const std::string& rid) override;

  const RingKVPlan& staged() const { return plan_; }
  // One pass of the staged step at `layer`: each row's frame (k, v:
  // [rows * T, H_kv, D] f32) into its scratch frame and, with commit, into
  // its ring slot where the frame writes one.
  void upsert(int64_t layer, ConstTensorView k, ConstTensorView v, bool commit);
  // Each row's queries (q: [rows * T, Hq, D]) over its own session's visible
  // slots, the current frame (in the scratch) included.
  void attend(int64_t layer, ConstTensorView q, TensorView out, std::optional<float> scale = std::nullopt) {
    storage_.attend(layer, q, out, scale);
  }
  // One pass as a model makes it: upsert the pass's frame (kept when
  // pass.commit), then attend. Rows are frames: pass.q_indptr and mask are
  // not read (attention within a frame is bidirectional).
  void attend(int64_t layer, const LayerPass& pass) override;
  // Keys are cached rotated to their frame's positions: cache positions do
  // not apply (InputError).
  int64_t seen_before(std::size_t row) const override;

  RingSessionState get_state(const std::string& rid) const;
  bool holds_claim(const std::string& rid) const override { return session_of(rid).has_value(); }
  // A request without a session has committed nothing: its state is empty.
  std::unique_ptr<ResourceState> save(const std::string& rid) const override;
  void restore_position(const std::string& rid, const ResourceState& state) override {
    restore_position(rid, state_as<RingSessionState>(*this, state));
  }
  // An empty state (nothing committed) loads nothing.
  void load(const std::string& rid, const ResourceState& state) override;
  // Before the request's first step here: its clock, so that step's
  // declared frame is checked against it while it waits for a session.
  // InputError, and nothing changed, when the clock is out of range.
  void restore_position(const std::string& rid, const RingSessionState& state);
  // Restores into the request's session; a state of another geometry is
  // refused with the layer and the shapes, before anything is written.
  void load_state(const std::string& rid, const RingSessionState& state);

  std::size_t memory_bytes() const override { return storage_.memory_bytes(); }
  Occupancy occupancy() const override { return {book_.pool().in_use(), book_.pool().size(), "sessions"}; }
  int64_t requests() const override { return book_.requests(); }

 private:
  int32_t held_session(const std::string& rid, const char* op) const;

  RingKVSpec spec_;
  ResourceOptions options_;
  RingKVBook book_;
  RingKVStorage storage_;
  RingKVPlan plan_;
  bool staged_ = false;
  bool pass_committed_ = false;  // a committing pass of the staged step ran
};

}  // namespace mstar
