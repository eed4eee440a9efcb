#pragma once
// The ring resource's host bookkeeping: requests, which session each holds,
// each request's frame clock, and which frame slots of each session hold a
// committed frame in each layer. No buffer lives here, so admission, clock
// and visibility rules are tested without allocating a ring.
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "resources/resource.h"
#include "resources/ring_kv/config.h"
#include "resources/slot_pool.h"
#include "kernels/ring_kv.h"

namespace mstar {

struct RingRequest {
  std::optional<int32_t> session;
  std::optional<int64_t> next_frame;  // set by the first commit: the frame the next step must declare
};

// What a step becomes on the host: one session per row and, per layer, where
// each row's frame goes and which token slots it sees.
struct RingKVPlan {
  struct Layer {
    std::vector<int64_t> scratch_start;  // [rows]: the row's scratch frame
    std::vector<int64_t> ring_start;     // [rows]: its ring slot, or -1 when the frame writes none
    std::vector<int32_t> range_indptr;   // [rows + 1]
    std::vector<kernels::RingRange> ranges;
    std::vector<int64_t> span_lo, span_hi;  // [rows]: the row's session span
  };
  std::vector<int32_t> session;  // [rows]; padding rows get the padding session
  std::vector<int64_t> frame;    // [rows]: the declared frame (0 for padding)
  std::vector<Layer> layers;     // [num_layers]
};

class RingKVBook {
 public:
  // The largest frame a step may declare.
  static constexpr int64_t kMaxFrame = int64_t{1} << 62;

  explicit RingKVBook(const RingKVConfig& config);

  const RingKVConfig& config() const { return config_; }
  const SlotPool& pool() const { return pool_; }
  // The shared session padding rows are parked on; no request ever owns it.
  int32_t padding_session() const { return static_cast<int32_t>(config_.num_sessions); }

  void ingest(const std::string& rid);
  [[nodiscard]] AdmitOutcome check(const Step& step, const StepContext& ctx) const;
  void claim(const Step& step, const StepContext& ctx);
  // check, then claim when accepted.
  [[nodiscard]] AdmitOutcome admit(const Step& step, const StepContext& ctx);
  RingKVPlan plan(const Step& step, const StepContext& ctx) const;
  // After a step whose committing pass ran: each request's clock moves past
  // its frame and the frame's ring slot counts as written where it wrote.
  void commit(const Step& step, const StepContext& ctx);
  // Releases the request's session (returned so storage can zero it) and
  // forgets its clock; remove also forgets the request.
  std::optional<int32_t> release(const std::string& rid);
  std::optional<int32_t> remove(const std::string& rid);

  // One session's written flags in one layer ([ring_frames + 1], scratch last).
  std::vector<uint8_t> written(int64_t layer, int32_t session) const;
  // Sets a request's clock before it holds a session (a restored state);
  // InputError when the request is unknown or the frame out of range.
  void restore_clock(const std::string& rid, std::optional<int64_t> next_frame);
  // Restores a session's clock and flags (a loaded state).
  void restore(const std::string& rid, std::optional<int64_t> next_frame,
               const std::vector<std::vector<uint8_t>>& written);

  const RingRequest* find(const std::string& rid) const;
  int64_t requests() const { return static_cast<int64_t>(requests_.size()); }

 private:
  int64_t frame_slots(int64_t layer) const { return config_.layers[static_cast<size_t>(layer)].ring_frames + 1; }
  uint8_t* flags(int64_t layer, int32_t session);
  const uint8_t* flags(int64_t layer, int32_t session) const;
  void clear(int32_t session);

  RingKVConfig config_;
  SlotPool pool_;
  std::map<std::string, RingRequest> requests_;
  // [layer][session * (ring_frames + 1) + frame slot], every session and the
  // padding one: 1 where a committed frame lives; the scratch is always 1.
  std::vector<std::vector<uint8_t>> written_;
};

}  // namespace mstar
