#include "resources/ring_kv/book.h"

#include <algorithm>
#include <set>

#include <fmt/format.h>

#include "core/errors.h"
#include "resources/ring_kv/layout.h"

namespace mstar {

RingKVBook::RingKVBook(const RingKVConfig& config) : config_(config), pool_(config.num_sessions) {
  for (int64_t l = 0; l < config_.num_layers; ++l)
    written_.emplace_back(static_cast<size_t>(config_.total_sessions() * frame_slots(l)), 0);
  for (int32_t s = 0; s < static_cast<int32_t>(config_.total_sessions()); ++s) clear(s);
}

uint8_t* RingKVBook::flags(int64_t layer, int32_t session) {
  return written_[static_cast<size_t>(layer)].data() + session * frame_slots(layer);
}
const uint8_t* RingKVBook::flags(int64_t layer, int32_t session) const {
  return written_[static_cast<size_t>(layer)].data() + session * frame_slots(layer);
}

void RingKVBook::clear(int32_t session) {
  for (int64_t l = 0; l < config_.num_layers; ++l) {
    uint8_t* f = flags(l, session);
    std::fill(f, f + frame_slots(l), 0);
    f[frame_slots(l) - 1] = 1;  // the scratch frame always counts as written: it holds the current frame
  }
}

void RingKVBook::ingest(const std::string& rid) {
  if (rid.empty()) throw InputError("ring_kv: a request id must not be empty");
  requests_.try_emplace(rid);
}

const RingRequest* RingKVBook::find(const std::string& rid) const {
  auto it = requests_.find(rid);
  return it == requests_.end() ? nullptr : &it->second;
}

AdmitOutcome RingKVBook::check(const Step& step, const StepContext& ctx) const {
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
    // The clock moves to f + 1 and a bucket is computed from f + dilation:
    // a frame past 2^62 would overflow both.
    if (f > kMaxFrame)
      return AdmitOutcome::refuse(rid, fmt::format("{}: declares frame {}, beyond the clock's range [0, {}]", what, f,
                                                   kMaxFrame));
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
  if (needs > pool_.free_count())
    return AdmitOutcome::retry_later(
        first_waiting, fmt::format("request '{}' needs a session: {} of {} are free and this step needs {}",
                                   first_waiting, pool_.free_count(), pool_.size(), needs));
  return AdmitOutcome::accept();
}

AdmitOutcome RingKVBook::admit(const Step& step, const StepContext& ctx) {
  AdmitOutcome out = check(step, ctx);
  if (out.ok()) claim(step, ctx);
  return out;
}

void RingKVBook::claim(const Step& step, const StepContext& /*ctx*/) {
  for (const Segment& seg : step.segments) {
    RingRequest& req = requests_.at(seg.request_id);
    if (req.session) continue;
    req.session = pool_.acquire();
    MSTAR_ASSERT(req.session.has_value(), "check() promised a free session");
  }
}

RingKVPlan RingKVBook::plan(const Step& step, const StepContext& ctx) const {
  RingKVPlan p;
  const auto rows = static_cast<size_t>(ctx.rows());
  for (size_t r = 0; r < rows; ++r) {
    if (ctx.is_padding[r]) {
      p.session.push_back(padding_session());
      p.frame.push_back(0);
      continue;
    }
    const RingRequest* req = find(ctx.request_ids[r]);
    auto fit = step.frames.find(ctx.request_ids[r]);
    if (!req || !req->session || fit == step.frames.end())
      throw InputError(
          fmt::format("ring_kv: plan for request '{}', which this step did not admit", ctx.request_ids[r]));
    p.session.push_back(*req->session);
    p.frame.push_back(fit->second);
  }
  const int64_t T = config_.tokens_per_frame;
  p.layers.resize(static_cast<size_t>(config_.num_layers));
  for (int64_t l = 0; l < config_.num_layers; ++l) {
    const RingGeometry& g = config_.layers[static_cast<size_t>(l)];
    RingKVPlan::Layer& pl = p.layers[static_cast<size_t>(l)];
    pl.range_indptr.push_back(0);
    for (size_t r = 0; r < rows; ++r) {
      const int64_t lo = p.session[r] * config_.capacity(l);
      const RingTarget target = ring_target(g, p.frame[r]);
      pl.span_lo.push_back(lo);
      pl.span_hi.push_back(lo + config_.capacity(l));
      pl.scratch_start.push_back(lo + g.ring_frames * T);
      pl.ring_start.push_back(target.write_step ? lo + target.slot * T : -1);
      visible_ranges(g, T, lo, flags(l, p.session[r]), target, pl.ranges);
      pl.range_indptr.push_back(static_cast<int32_t>(pl.ranges.size()));
    }
  }
  return p;
}

void RingKVBook::commit(const Step& step, const StepContext& /*ctx*/) {
  for (const Segment& seg : step.segments) {
    auto it = requests_.find(seg.request_id);
    auto fit = step.frames.find(seg.request_id);
    if (it == requests_.end() || !it->second.session || fit == step.frames.end())
      throw InputError(fmt::format("ring_kv: commit for request '{}', which was not admitted", seg.request_id));
    const int64_t f = fit->second;
    it->second.next_frame = f + 1;  // from the declaration: committing twice is harmless
    for (int64_t l = 0; l < config_.num_layers; ++l) {
      const RingTarget t = ring_target(config_.layers[static_cast<size_t>(l)], f);
      if (t.write_step) flags(l, *it->second.session)[t.slot] = 1;
    }
  }
}

std::optional<int32_t> RingKVBook::release(const std::string& rid) {
  auto it = requests_.find(rid);
  if (it == requests_.end()) throw InputError(fmt::format("ring_kv: reset of unknown request '{}'", rid));
  std::optional<int32_t> s = it->second.session;
  if (s) {
    pool_.release(*s);
    clear(*s);
  }
  it->second = RingRequest{};
  return s;
}

std::optional<int32_t> RingKVBook::remove(const std::string& rid) {
  if (!find(rid)) return std::nullopt;  // removing twice is harmless
  std::optional<int32_t> s = release(rid);
  requests_.erase(rid);
  return s;
}

std::vector<uint8_t> RingKVBook::written(int64_t layer, int32_t session) const {
  const uint8_t* f = flags(layer, session);
  return std::vector<uint8_t>(f, f + frame_slots(layer));
}

void RingKVBook::restore_clock(const std::string& rid, std::optional<int64_t> next_frame) {
  auto it = requests_.find(rid);
  if (it == requests_.end()) throw InputError(fmt::format("ring_kv: restore of unknown request '{}'", rid));
  if (next_frame && (*next_frame < 0 || *next_frame > kMaxFrame + 1))
    throw InputError(fmt::format("ring_kv: restore of request '{}': next frame {} is outside [0, {}]", rid, *next_frame,
                                 kMaxFrame + 1));
  it->second.next_frame = next_frame;
}

void RingKVBook::restore(const std::string& rid, std::optional<int64_t> next_frame,
                         const std::vector<std::vector<uint8_t>>& written) {
  auto it = requests_.find(rid);
  MSTAR_ASSERT(it != requests_.end() && it->second.session, "restore of a request that holds no session");
  MSTAR_ASSERT(static_cast<int64_t>(written.size()) == config_.num_layers, "restore: one flag row per layer");
  for (int64_t l = 0; l < config_.num_layers; ++l) {
    MSTAR_ASSERT(static_cast<int64_t>(written[static_cast<size_t>(l)].size()) == frame_slots(l), "restore: flag row size");
    std::copy(written[static_cast<size_t>(l)].begin(), written[static_cast<size_t>(l)].end(), flags(l, *it->second.session));
  }
  it->second.next_frame = next_frame;
}

}  // namespace mstar
