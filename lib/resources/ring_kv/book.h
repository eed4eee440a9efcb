#pragma once
// The ring resource's host bookkeeping: requests, which session each holds,
// and each request's frame clock. No buffer lives here, so the admission and
// clock rules are tested without allocating a ring.
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "resources/resource.h"

namespace mstar {

// A step of frame rollouts: each segment is one request's frame, and frames
// says which frame each request declares. All denoising passes of a frame and
// its committing pass run inside one step.
struct RingKVStep {
  std::vector<Segment> segments;
  std::map<std::string, int64_t> frames;
};

// One session index per batch row; padding rows go to the padding session.
struct RingPlan {
  std::vector<int32_t> session;
};

struct RingRequest {
  std::optional<int32_t> session;
  std::optional<int64_t> next_frame;  // set by the first commit: the frame the next step must declare
};

class RingBook {
 public:
  explicit RingBook(int64_t num_sessions);

  int64_t num_sessions() const { return static_cast<int64_t>(held_.size()); }
  int32_t padding_session() const { return static_cast<int32_t>(held_.size()); }
  int64_t free_sessions() const { return static_cast<int64_t>(free_.size()); }
  bool held(int32_t session) const { return held_[static_cast<size_t>(session)] != 0; }

  void ingest(const std::string& rid);
  [[nodiscard]] AdmitOutcome check(const RingKVStep& step, const StepContext& ctx) const;
  [[nodiscard]] AdmitOutcome admit(const RingKVStep& step, const StepContext& ctx);
  RingPlan plan(const RingKVStep& step, const StepContext& ctx) const;
  void commit(const RingKVStep& step, const StepContext& ctx);
  // Releases the request's session (returned so the manager can zero it)
  // and forgets its clock; remove also forgets the request.
  std::optional<int32_t> release(const std::string& rid);
  std::optional<int32_t> remove(const std::string& rid);
  void set_clock(const std::string& rid, std::optional<int64_t> next_frame);

  const RingRequest* find(const std::string& rid) const;

 private:
  std::map<std::string, RingRequest> requests_;
  std::vector<int32_t> free_;  // a stack of free session indices
  std::vector<uint8_t> held_;
};

}  // namespace mstar
