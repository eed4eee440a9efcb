#include "resources/ring_kv/book.h"

#include <set>

#include <fmt/format.h>

#include "core/errors.h"

namespace mstar {

RingBook::RingBook(int64_t num_sessions) : held_(static_cast<size_t>(num_sessions), 0) {
  MSTAR_ASSERT(num_sessions > 0 && num_sessions < INT32_MAX, "ring: session count out of range");
  for (int64_t s = num_sessions - 1; s >= 0; --s) free_.push_back(static_cast<int32_t>(s));
}

void RingBook::ingest(const std::string& rid) {
  if (rid.empty()) throw InputError("ring_kv: a request id must not be empty");
  requests_.try_emplace(rid);
}

const RingRequest* RingBook::find(const std::string& rid) const {
  auto it = requests_.find(rid);
  return it == requests_.end() ? nullptr : &it->second;
}

AdmitOutcome RingBook::check(const RingKVStep& step, const StepContext& ctx) const {
  if (ctx.request_ids.size() != ctx.is_padding.size())
    throw InputError(fmt::format("ring_kv: step context has {} request ids but {} padding flags",
                                 ctx.request_ids.size(), ctx.is_padding.size()));
  std::map<std::string, int> rows;
  for (size_t r = 0; r < ctx.request_ids.size(); ++r)
    if (!ctx.is_padding[r]) ++rows[ctx.request_ids[r]];

  // Every check runs before anything is claimed.
  std::set<std::string> seen;
  int64_t needs = 0;
  std::string first_waiting;
  for (const Segment& seg : step.segments) {
    const std::string& rid = seg.request_id;
    const std::string what = fmt::format("request '{}' (segment '{}')", rid, seg.label);
    if (!seen.insert(rid).second) return AdmitOutcome::refuse(rid, what + ": two segments in one step");
    const RingRequest* req = find(rid);
    if (!req) return AdmitOutcome::refuse(rid, what + ": unknown request (never ingested)");
    if (rows[rid] != 1)
      return AdmitOutcome::refuse(rid, fmt::format("{}: has {} rows in the batch; a ring session takes one frame "
                                                   "per step",
                                                   what, rows[rid]));
    auto fit = step.frames.find(rid);
    if (fit == step.frames.end()) {
      if (req->next_frame)
        return AdmitOutcome::refuse(rid, fmt::format("{}: declares no frame clock; frame {} was expected", what,
                                                     *req->next_frame));
      return AdmitOutcome::refuse(rid, what + ": declares no frame clock");
    }
    const int64_t f = fit->second;
    if (f < 0) return AdmitOutcome::refuse(rid, fmt::format("{}: declares negative frame {}", what, f));
    if (req->next_frame && f != *req->next_frame)
      return AdmitOutcome::refuse(
          rid, fmt::format("{}: broken frame clock: frame {} was expected but frame {} was declared ({}; it would "
                           "select the wrong ring slot and rewrite history)",
                           what, *req->next_frame, f, f < *req->next_frame ? "a repeated frame" : "a skipped frame"));
    if (!req->session && needs++ == 0) first_waiting = rid;
  }
  for (const auto& [rid, n] : rows)
    if (!seen.count(rid))
      return AdmitOutcome::refuse(rid, fmt::format("request '{}' has rows in the batch but no segment", rid));
  if (needs > free_sessions())
    return AdmitOutcome::retry_later(
        first_waiting, fmt::format("request '{}' needs a session: {} of {} are free and this step needs {}",
                                   first_waiting, free_sessions(), num_sessions(), needs));
  return AdmitOutcome::accept();
}

AdmitOutcome RingBook::admit(const RingKVStep& step, const StepContext& ctx) {
  AdmitOutcome out = check(step, ctx);
  if (!out.ok()) return out;
  for (const Segment& seg : step.segments) {
    RingRequest& req = requests_.at(seg.request_id);
    if (req.session) continue;
    MSTAR_ASSERT(!free_.empty(), "check() promised a free session");
    req.session = free_.back();
    free_.pop_back();
    held_[static_cast<size_t>(*req.session)] = 1;
  }
  return out;
}

RingPlan RingBook::plan(const RingKVStep& /*step*/, const StepContext& ctx) const {
  RingPlan p;
  p.session.reserve(ctx.request_ids.size());
  for (size_t r = 0; r < ctx.request_ids.size(); ++r) {
    if (ctx.is_padding[r]) {
      p.session.push_back(padding_session());
      continue;
    }
    const RingRequest* req = find(ctx.request_ids[r]);
    if (!req || !req->session)
      throw InputError(
          fmt::format("ring_kv: plan for request '{}', which this step did not admit", ctx.request_ids[r]));
    p.session.push_back(*req->session);
  }
  return p;
}

void RingBook::commit(const RingKVStep& step, const StepContext& /*ctx*/) {
  for (const Segment& seg : step.segments) {
    auto it = requests_.find(seg.request_id);
    auto fit = step.frames.find(seg.request_id);
    if (it == requests_.end() || !it->second.session || fit == step.frames.end())
      throw InputError(fmt::format("ring_kv: commit for request '{}', which was not admitted", seg.request_id));
    it->second.next_frame = fit->second + 1;  // from the declaration: committing twice is harmless
  }
}

std::optional<int32_t> RingBook::release(const std::string& rid) {
  auto it = requests_.find(rid);
  if (it == requests_.end()) throw InputError(fmt::format("ring_kv: reset of unknown request '{}'", rid));
  std::optional<int32_t> s = it->second.session;
  if (s) {
    held_[static_cast<size_t>(*s)] = 0;
    free_.push_back(*s);
  }
  it->second = RingRequest{};
  return s;
}

std::optional<int32_t> RingBook::remove(const std::string& rid) {
  if (!find(rid)) return std::nullopt;  // removing twice is harmless
  std::optional<int32_t> s = release(rid);
  requests_.erase(rid);
  return s;
}

void RingBook::set_clock(const std::string& rid, std::optional<int64_t> next_frame) {
  auto it = requests_.find(rid);
  MSTAR_ASSERT(it != requests_.end(), "set_clock of an unknown request");
  it->second.next_frame = next_frame;
}

}  // namespace mstar
