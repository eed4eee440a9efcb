#include "resources/bounded_kv/book.h"

#include <algorithm>
#include <limits>
#include <set>

#include "core/errors.h"

namespace mstar {

BoundedKVBook::BoundedKVBook(const BoundedKVConfig& config) : config_(config), pool_(config.max_slots) {}

void BoundedKVBook::register_source(int id, int64_t len) {
  if (sources_.count(id)) throw InputError(fmt::format("bounded_kv: source {} is already registered", id));
  if (len <= 0 || len < config_.min_source_len || len > config_.max_source_len)
    throw InputError(fmt::format("bounded_kv: source {} has {} entries; allowed lengths are [{}, {}] and at least 1",
                                 id, len, std::max<int64_t>(1, config_.min_source_len), config_.max_source_len));
  sources_[id] = len;
}

void BoundedKVBook::remove_source(int id) {
  if (!sources_.count(id)) throw InputError(fmt::format("bounded_kv: source {} is not registered", id));
  if (int64_t users = source_users(id))
    throw InputError(fmt::format("bounded_kv: source {} is still read by {} request(s)", id, users));
  sources_.erase(id);
}

std::optional<int64_t> BoundedKVBook::source_len(int id) const {
  auto it = sources_.find(id);
  if (it == sources_.end()) return std::nullopt;
  return it->second;
}

int64_t BoundedKVBook::source_users(int id) const {
  return std::count_if(requests_.begin(), requests_.end(), [&](const auto& kv) {
    return kv.second.slot && kv.second.source_len > 0 && kv.second.source == id;
  });
}

void BoundedKVBook::ingest(const std::string& rid) {
  if (rid.empty()) throw InputError("bounded_kv: a request id must not be empty");
  requests_.try_emplace(rid);
}

const BoundedRequest* BoundedKVBook::find(const std::string& rid) const {
  auto it = requests_.find(rid);
  return it == requests_.end() ? nullptr : &it->second;
}

const BoundedRequest& BoundedKVBook::known(const std::string& rid, const char* op) const {
  const BoundedRequest* r = find(rid);
  if (!r) throw InputError(fmt::format("bounded_kv: {} of unknown request '{}'", op, rid));
  return *r;
}

AdmitOutcome BoundedKVBook::check(const Step& step, const StepContext& ctx) const {
  if (ctx.request_ids.size() != ctx.is_padding.size())
    throw InputError(fmt::format("bounded_kv: step context has {} request ids but {} padding flags",
                                 ctx.request_ids.size(), ctx.is_padding.size()));
  const int64_t R = config_.rows_per_request;

  // Rows: each request's rows are consecutive and there are exactly R of them.
  std::map<std::string, std::pair<int64_t, int64_t>> rows;  // rid -> (first row, count)
  for (int64_t r = 0; r < ctx.rows(); ++r) {
    if (ctx.is_padding[static_cast<size_t>(r)]) continue;
    const std::string& rid = ctx.request_ids[static_cast<size_t>(r)];
    auto [it, fresh] = rows.try_emplace(rid, r, 0);
    if (!fresh && it->second.first + it->second.second != r)
      return AdmitOutcome::refuse(rid, fmt::format("request '{}': its rows are not consecutive (row {} follows row {})",
                                                   rid, r, it->second.first + it->second.second - 1));
    ++it->second.second;
  }

  std::set<std::string> seen;
  for (const Segment& seg : step.segments)
    if (!seen.insert(seg.request_id).second)
      return AdmitOutcome::refuse(seg.request_id, fmt::format("request '{}' (segment '{}'): two segments in one step",
                                                              seg.request_id, seg.label));
  int64_t needs_slot = 0;
  std::string first_waiting;
  for (const Segment& seg : step.segments) {
    const std::string& rid = seg.request_id;
    const std::string what = fmt::format("request '{}' (segment '{}')", rid, seg.label);
    const BoundedRequest* req = find(rid);
    if (!req) return AdmitOutcome::refuse(rid, what + ": unknown request (never ingested)");
    auto rit = rows.find(rid);
    const int64_t nrows = rit == rows.end() ? 0 : rit->second.second;
    if (nrows != R)
      return AdmitOutcome::refuse(rid, fmt::format("{}: has {} rows in the batch; this resource needs {}", what,
                                                   nrows, R));
    if (seg.span < 0) return AdmitOutcome::refuse(rid, fmt::format("{}: negative span {}", what, seg.span));
    if (config_.query_window && seg.span > *config_.query_window)
      return AdmitOutcome::refuse(rid, fmt::format("{}: span {} exceeds query_window {}", what, seg.span,
                                                   *config_.query_window));
    if (seg.span > std::numeric_limits<int32_t>::max())
      return AdmitOutcome::refuse(rid, fmt::format("{}: span {} is larger than a step can address", what, seg.span));
    auto pit = step.streams.find(rid);
    if (pit == step.streams.end()) return AdmitOutcome::refuse(rid, what + ": declares no stream position");
    const StreamPosition& pos = pit->second;
    if (pos.source_len < config_.min_source_len || pos.source_len > config_.max_source_len)
      return AdmitOutcome::refuse(rid, fmt::format("{}: source length {} is outside the allowed [{}, {}]", what,
                                                   pos.source_len, config_.min_source_len, config_.max_source_len));
    if (pos.source_len > 0) {
      auto len = source_len(pos.source);
      if (!len)
        return AdmitOutcome::refuse(rid, fmt::format("{}: names source {}, which is not registered", what, pos.source));
      if (*len != pos.source_len)
        return AdmitOutcome::refuse(rid, fmt::format("{}: declares source_len {} but source {} has {} entries", what,
                                                     pos.source_len, pos.source, *len));
    }
    if (pos.written < 0) return AdmitOutcome::refuse(rid, fmt::format("{}: negative written {}", what, pos.written));
    if (pos.written != req->written)
      return AdmitOutcome::refuse(rid, fmt::format("{}: declares written {} but {} entries were committed", what,
                                                   pos.written, req->written));
    if (req->written > 0 && (pos.source_len != req->source_len || (pos.source_len > 0 && pos.source != req->source)))
      return AdmitOutcome::refuse(
          rid, fmt::format("{}: declares source {} of length {} but its stream started on source {} of length {}", what,
                           pos.source, pos.source_len, req->source, req->source_len));
    if (pos.written > std::numeric_limits<int64_t>::max() / 4 - seg.span)
      return AdmitOutcome::refuse(rid, fmt::format("{}: stream position {} + {} overflows", what, pos.written, seg.span));
    if (!req->slot) {
      if (needs_slot++ == 0) first_waiting = rid;
    }
  }
  for (const auto& [rid, r] : rows)
    if (!seen.count(rid))
      return AdmitOutcome::refuse(rid, fmt::format("request '{}' has rows in the batch but no segment", rid));

  if (needs_slot > pool_.free_count())
    return AdmitOutcome::retry_later(
        first_waiting, fmt::format("request '{}' needs a slot: {} of {} are free and this step needs {}", first_waiting,
                                   pool_.free_count(), pool_.size(), needs_slot));
  return AdmitOutcome::accept();
}

AdmitOutcome BoundedKVBook::admit(const Step& step, const StepContext& ctx) {
  AdmitOutcome out = check(step, ctx);
  if (out.ok()) claim(step, ctx);
  return out;
}

void BoundedKVBook::claim(const Step& step, const StepContext& /*ctx*/) {
  for (const Segment& seg : step.segments) {
    BoundedRequest& req = requests_.at(seg.request_id);
    if (!req.slot) {
      req.slot = pool_.acquire();
      MSTAR_ASSERT(req.slot.has_value(), "check() promised a free slot");
    }
    if (req.written == 0) {  // the stream (re)starts: it takes the declared source
      const StreamPosition& pos = step.streams.at(seg.request_id);
      req.source = pos.source;
      req.source_len = pos.source_len;
    }
  }
}

BoundedKVPlan BoundedKVBook::plan(const Step& step, const StepContext& ctx) const {
  std::map<std::string, const Segment*> segs;
  for (const Segment& s : step.segments) segs[s.request_id] = &s;
  const RowGeometry geo{config_.sink_capacity(), config_.reverse_step_order};

  BoundedKVPlan plan;
  const auto rows = static_cast<size_t>(ctx.rows());
  plan.rows.resize(rows);
  plan.source_of_row.assign(rows, -1);
  plan.source_len.assign(rows, 0);
  plan.row_in_request.assign(rows, 0);
  plan.kv_indptr.assign(rows + 1, 0);
  std::map<std::string, int32_t> seen_rows;
  for (size_t r = 0; r < rows; ++r) {
    int64_t span = 0;
    if (!ctx.is_padding[r]) {
      const std::string& rid = ctx.request_ids[r];
      auto sit = segs.find(rid);
      const BoundedRequest* req = find(rid);
      if (sit == segs.end() || !req || !req->slot)
        throw InputError(fmt::format("bounded_kv: plan for request '{}', which this step did not admit", rid));
      const StreamPosition& pos = step.streams.at(rid);
      span = sit->second->span;
      plan.rows[r] = plan_row(geo, config_.retention_for(pos.source_len), pos, span, *req->slot);
      plan.source_of_row[r] = pos.source_len > 0 ? pos.source : -1;
      plan.source_len[r] = pos.source_len;
      plan.row_in_request[r] = seen_rows[rid]++;
    }
    plan.kv_indptr[r + 1] = plan.kv_indptr[r] + static_cast<int32_t>(span);
  }
  return plan;
}

void BoundedKVBook::commit(const Step& step, const StepContext& /*ctx*/) {
  for (const Segment& seg : step.segments) {
    auto it = requests_.find(seg.request_id);
    if (it == requests_.end() || !it->second.slot)
      throw InputError(fmt::format("bounded_kv: commit for request '{}', which holds no slot", seg.request_id));
    auto pit = step.streams.find(seg.request_id);
    if (pit == step.streams.end())
      throw InputError(fmt::format("bounded_kv: commit for request '{}', which declares no position", seg.request_id));
    it->second.written = pit->second.written + seg.span;  // from the declaration: a second commit changes nothing
  }
}

int64_t BoundedKVPlan::retained(size_t row) const {
  int64_t n = 0;
  for (const auto& rd : rows[row].table.reads) n += rd.len;
  return n;
}

void BoundedKVBook::reset(const std::string& rid, OnReset what) {
  known(rid, "reset");
  BoundedRequest& req = requests_.at(rid);
  req.written = 0;
  if (what == OnReset::release && req.slot) {
    pool_.release(*req.slot);
    req.slot.reset();
  }
}

void BoundedKVBook::restore(const std::string& rid, int64_t written, int source, int64_t length) {
  known(rid, "restore");
  if (written < 0 || written > std::numeric_limits<int64_t>::max() / 8)
    throw InputError(fmt::format("bounded_kv: restore of request '{}': written {} is not a stream position", rid, written));
  if (length < config_.min_source_len || length > config_.max_source_len)
    throw InputError(fmt::format("bounded_kv: restore of request '{}': source length {} is outside the allowed [{}, {}]",
                                 rid, length, config_.min_source_len, config_.max_source_len));
  if (length > 0) {
    const auto len = source_len(source);
    if (!len || *len != length)
      throw InputError(fmt::format("bounded_kv: restore of request '{}': source {} of length {} is not registered here",
                                   rid, source, length));
  }
  BoundedRequest& req = requests_.at(rid);
  req.written = written;
  req.source = source;
  req.source_len = length;
}

void BoundedKVBook::remove(const std::string& rid) {
  auto it = requests_.find(rid);
  if (it == requests_.end()) return;  // removing twice is harmless
  if (it->second.slot) pool_.release(*it->second.slot);
  requests_.erase(it);
}

}  // namespace mstar
