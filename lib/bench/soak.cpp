#include "bench/soak.h"

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <unordered_map>
#include <random>

#include <fmt/format.h>

#include "bench/engine_bench.h"
#include "bench/svg.h"
#include "core/errors.h"
#include "core/heap.h"
#include "engine/engine.h"
#include "engine/program.h"

namespace mstar::bench {

namespace {

using nlohmann::json;
using Clock = std::chrono::steady_clock;

// What the soak keeps of the ids it submitted: only the open ones, so its
// own bookkeeping does not grow with the run it measures.
struct Ledger {
  std::unordered_map<std::string, int> open;  // id -> submissions not yet ended
  std::vector<std::string> live;              // open ids (cancel and snapshot targets)
  int64_t submissions = 0, endings = 0;
  std::vector<std::string> problems;

  void submit(const std::string& id) {
    ++open[id];
    live.push_back(id);
    ++submissions;
  }
  void end(const std::string& id) {
    ++endings;
    auto it = open.find(id);
    if (it == open.end()) {
      if (problems.size() < 20) problems.push_back(fmt::format("request '{}' ended more often than it was submitted", id));
      return;
    }
    if (--it->second == 0) open.erase(it);
    if (auto l = std::find(live.begin(), live.end(), id); l != live.end()) live.erase(l);
  }
};

class Traffic {
 public:
  Traffic(const ResolvedDeployment& d, uint64_t seed) : gen_(seed), speech_(d.model.family->task == "speech") {
    const json& w = d.deployment.workload;
    if (w.contains("voices"))
      for (const auto& [name, tokens] : w["voices"].items()) voices_.push_back(name);
    if (speech_ && voices_.empty())
      throw ConfigError("mstar-bench soak: a speech deployment needs voices in its workload");
    vocab_ = d.model.arch->vocab_size();
    for (const auto& r : d.model.resources)
      if (const int64_t qw = r.spec->source_limits().query_window; qw != INT64_MAX) query_window_ = qw;
    control_dim_ = speech_ ? 0 : d.model.arch->to_json().value("control_dim", int64_t{0});
  }

  int64_t uniform(int64_t lo, int64_t hi) { return std::uniform_int_distribution<int64_t>(lo, hi)(gen_); }
  bool coin(double p) { return std::bernoulli_distribution(p)(gen_); }

  json request(const std::string& id) {
    json r{{"id", id}};
    if (speech_) {
      r["voice"] = voices_[static_cast<size_t>(uniform(0, static_cast<int64_t>(voices_.size()) - 1))];
      json prompt = json::array();
      for (int64_t i = uniform(1, std::min<int64_t>(16, query_window_)); i > 0; --i) prompt.push_back(uniform(1, vocab_ - 1));
      r["prompt"] = prompt;
      r["max_tokens"] = uniform(8, 600);
      if (coin(0.7))
        r["sampling"] = {{"temperature", uniform(1, 12) / 10.0}, {"top_k", uniform(0, 64)}, {"seed", uniform(0, 1 << 30)}};
    } else {
      r["frames"] = uniform(4, 60);
      r["seed"] = uniform(0, 1 << 30);
      if (control_dim_ > 0 && coin(0.5)) {
        json c = json::array();
        for (int64_t i = uniform(1, 4); i > 0; --i) {
          json v = json::array();
          for (int64_t k = 0; k < control_dim_; ++k) v.push_back(uniform(-100, 100) / 50.0);
          c.push_back(v);
        }
        r["controls"] = c;
      }
    }
    return r;
  }

  // A request the engine must refuse alone: a field out of range, an
  // unknown field or voice, a wrong type.
  json bad(const std::string& id) {
    json r = request(id);
    switch (uniform(0, 3)) {
      case 0: r[speech_ ? "max_tokens" : "frames"] = -uniform(0, 5); break;
      case 1: r["colour"] = "blue"; break;
      case 2: r[speech_ ? "voice" : "seed"] = speech_ ? json("nobody") : json(-1); break;
      default: r[speech_ ? "prompt" : "controls"] = "not a list"; break;
    }
    return r;
  }

 private:
  std::mt19937_64 gen_;
  bool speech_;
  std::vector<std::string> voices_;
  int64_t vocab_ = 2, query_window_ = 64, control_dim_ = 0;
};

}  // namespace

SoakResult soak(const ResolvedDeployment& d, const SoakOptions& o) {
  namespace fs = std::filesystem;
  SoakResult out;
  const fs::path scratch = fs::temp_directory_path() / fmt::format("mstar-soak-{}", ::getpid());
  fs::create_directories(scratch);
  auto engine = Engine::create(d);
  Traffic traffic(d, o.seed);
  Ledger ledger;
  int64_t capacity = 0;
  for (int64_t i = 0; i < engine->resources().size(); ++i) capacity += engine->resources().at(i).occupancy().capacity;

  auto take = [&](const std::vector<Event>& events) {
    for (const Event& e : events) {
      const std::string kind = e.body["event"].get<std::string>();
      const std::string id = e.body["id"].get<std::string>();
      if (kind == "snapshot") {
        ++out.snapshots;
      } else if (kind == "resumed") {
        ++out.resumed;
      } else if (kind == "error" && e.body.contains("op")) {
        if (e.body["op"] == "snapshot") ++out.snapshot_errors;  // a cancel of an id that just ended is expected
      } else if (kind == "done" || kind == "error") {
        ledger.end(id);
        if (kind == "error") ++out.failed;
        else if (e.body["reason"] == "cancelled") ++out.cancelled;
        else ++out.done;
      }
    }
  };

  const auto start = Clock::now();
  const double run_s = o.minutes * 60, warm_s = std::min(o.warmup_minutes * 60, run_s / 5);
  // Claimed and written now: reserved only, its pages would become resident
  // one at a time as samples arrive, 80 bytes a second, and the soak would
  // measure its own creep (it did: 5 KiB a minute in the world demo).
  out.samples.assign(static_cast<size_t>(run_s) + 16, SoakSample{});
  size_t taken = 0;
  int64_t next_id = 0, next_sample = 0, snapshot_files = 0;
  auto sample = [&](double t) {
    MSTAR_ASSERT(taken < out.samples.size(), "soak: one sample a second, and room for as many as the run has seconds");
    SoakSample& s = out.samples[taken++];
    s.seconds = t;
    s.steps = engine->counters().steps;
    s.rss_bytes = current_rss_bytes();
    s.heap_bytes = heap_in_use_bytes();
    for (int64_t i = 0; i < engine->resources().size(); ++i) s.in_use += engine->resources().at(i).occupancy().in_use;
    s.capacity = capacity;
    s.running = engine->running();
    s.waiting = engine->waiting();
    s.produced = engine->counters().produced;
    s.submitted = ledger.submissions;
    s.ended = ledger.endings;
    if (s.in_use > s.running + s.waiting)
      out.problems.push_back(fmt::format("at {:.0f} s, {} slots or sessions are in use by {} requests", t, s.in_use,
                                         s.running + s.waiting));
  };

  for (;;) {
    const double t = std::chrono::duration<double>(Clock::now() - start).count();
    if (t >= static_cast<double>(next_sample)) {
      sample(t);
      ++next_sample;
    }
    if (t >= run_s) break;
    // Keep the pool full and a queue waiting, so admission, eviction and
    // slot reuse never rest.
    const int64_t live = engine->running() + engine->waiting();
    if (live < capacity + 2 && traffic.coin(0.6)) {
      const std::string id = fmt::format("r{}", next_id++);
      ledger.submit(id);
      engine->submit(traffic.request(id));
      ++out.submitted;
    }
    if (traffic.coin(0.01)) {  // refused alone
      const std::string id = fmt::format("bad{}", next_id++);
      ledger.submit(id);
      engine->submit(traffic.bad(id));
      ++out.bad, ++out.submitted;
    }
    if (traffic.coin(0.005)) {  // a line that is not JSON
      const std::string id = fmt::format("line{}", next_id++);
      ledger.submit(id);
      engine->reject(id, id + ": not valid JSON");
      ++out.bad, ++out.submitted;
    }
    if (!ledger.live.empty() && traffic.coin(0.004)) {  // an id already in use: refused, the first goes on
      const std::string id = ledger.live[static_cast<size_t>(traffic.uniform(0, static_cast<int64_t>(ledger.live.size()) - 1))];
      ledger.submit(id);
      engine->submit(traffic.request(id));
      ++out.duplicates, ++out.submitted;
    }
    if (!ledger.live.empty() && traffic.coin(0.02))
      engine->cancel(ledger.live[static_cast<size_t>(traffic.uniform(0, static_cast<int64_t>(ledger.live.size()) - 1))]);
    if (!ledger.live.empty() && traffic.coin(0.01)) {
      // At most eight files, overwritten in turn: the disk a soak uses is bounded too.
      const std::string id = ledger.live[static_cast<size_t>(traffic.uniform(0, static_cast<int64_t>(ledger.live.size()) - 1))];
      engine->snapshot(id, scratch / fmt::format("s{}.snap", snapshot_files++ % 8));
    }
    if (snapshot_files > 0 && traffic.coin(0.01)) {
      const std::string id = fmt::format("res{}", next_id++);
      ledger.submit(id);
      engine->resume(scratch / fmt::format("s{}.snap", traffic.uniform(0, std::min<int64_t>(snapshot_files, 8) - 1)), id);
      ++out.submitted;
    }
    take(engine->step());
  }
  // Drain: nothing new arrives; everything submitted must end.
  for (int64_t steps = 0; !engine->idle(); ++steps) {
    if (steps > 1'000'000) {
      out.problems.push_back("the engine did not become idle within a million steps of the last arrival");
      break;
    }
    take(engine->step());
  }
  sample(std::chrono::duration<double>(Clock::now() - start).count());
  out.samples.resize(taken);
  out.steps = engine->counters().steps;
  out.produced = engine->counters().produced;

  out.problems.insert(out.problems.end(), ledger.problems.begin(), ledger.problems.end());
  int reported = 0;
  for (const auto& [id, n] : ledger.open)
    if (reported++ < 20) out.problems.push_back(fmt::format("request '{}' never ended ({} submission(s) open)", id, n));
  for (int64_t i = 0; i < engine->resources().size(); ++i) {
    const Resource& r = engine->resources().at(i);
    if (r.occupancy().in_use != 0 || r.requests() != 0)
      out.problems.push_back(fmt::format("resource '{}': {} {} still in use and {} requests registered when idle", r.key(),
                                         r.occupancy().in_use, r.occupancy().unit, r.requests()));
  }
  for (const SoakSample& s : out.samples) {
    if (s.seconds <= warm_s) out.rss_warm_peak = std::max(out.rss_warm_peak, s.rss_bytes);
    else out.rss_after_peak = std::max(out.rss_after_peak, s.rss_bytes);
    int64_t& heap_peak = s.seconds <= warm_s ? out.heap_warm_peak : out.heap_after_peak;
    heap_peak = std::max(heap_peak, s.heap_bytes);
  }
  // As many windows as the judged time holds minutes (four in a run
  // shorter than five minutes of it), each the same number of steps.
  int64_t warm_step = 0, end_step = 0;  // the steps by the end of the warm-up and of the traffic (not the drain)
  for (const SoakSample& s : out.samples) {
    if (s.seconds <= warm_s) warm_step = s.steps;
    if (s.seconds <= run_s) end_step = s.steps;
  }
  const int64_t windows = std::clamp<int64_t>(static_cast<int64_t>((run_s - warm_s) / 60), 4, 1 << 20);
  const MemoryLevels& level = out.rss_level =
      memory_levels(out.samples, warm_step, end_step, std::max<int64_t>(1, (end_step - warm_step) / windows));
  if (level.growth() > o.growth_limit)
    out.problems.push_back(fmt::format("resident memory grew from a level of {:.2f} MiB in the first window after the "
                                       "warm-up to {:.2f} MiB in the window from step {} (+{:.2f}%, limit {:.0f}%)",
                                       static_cast<double>(level.base) / (1 << 20),
                                       static_cast<double>(level.high) / (1 << 20), level.high_from_step,
                                       100 * level.growth(), 100 * o.growth_limit));
  std::error_code ec;
  fs::remove_all(scratch, ec);
  return out;
}

MemoryLevels memory_levels(const std::vector<SoakSample>& samples, int64_t warm, int64_t end, int64_t window_steps) {
  MSTAR_ASSERT(window_steps > 0, "memory_levels: a window spans some steps");
  MemoryLevels out;
  std::vector<int64_t> in;
  for (int64_t from = warm; from < end; from += window_steps) {
    const int64_t to = std::min(from + window_steps, end);
    if (out.windows > 0 && 2 * (to - from) < window_steps) continue;  // a last window shorter than half of one
    in.clear();
    for (const SoakSample& s : samples)
      if (s.steps > from && s.steps <= to) in.push_back(s.rss_bytes);
    if (in.empty()) continue;
    std::nth_element(in.begin(), in.begin() + static_cast<std::ptrdiff_t>(in.size() / 2), in.end());
    const int64_t median = in[in.size() / 2];
    if (out.windows++ == 0) out.base = out.high = median, out.high_from_step = from;
    else if (median > out.high) out.high = median, out.high_from_step = from;
  }
  return out;
}

std::string soak_csv(const SoakResult& r) {
  std::string s = "seconds,steps,rss_mib,heap_mib,in_use,capacity,running,waiting,produced,submitted,ended\n";
  for (const SoakSample& x : r.samples)
    s += fmt::format("{:.1f},{},{:.3f},{},{},{},{},{},{},{},{}\n", x.seconds, x.steps,
                     static_cast<double>(x.rss_bytes) / (1 << 20),
                     x.heap_bytes < 0 ? std::string() : fmt::format("{:.3f}", static_cast<double>(x.heap_bytes) / (1 << 20)),
                     x.in_use, x.capacity, x.running, x.waiting, x.produced, x.submitted, x.ended);
  return s;
}

namespace {

nlohmann::json mib_or_blank(int64_t bytes) {
  return bytes < 0 ? nlohmann::json("-") : nlohmann::json(static_cast<double>(bytes) / (1 << 20));
}

}  // namespace

Table soak_table(const SoakResult& r, const SoakOptions& o) {
  const double seconds = r.samples.empty() ? 0 : r.samples.back().seconds;
  return Table{{"minutes", "steps", "produced", "submitted", "done", "cancelled", "failed", "bad", "duplicates",
                "snapshots", "snapshot_errors", "resumed", "heap_warm_peak_mib", "heap_after_peak_mib",
                "rss_warm_peak_mib", "rss_after_peak_mib", "rss_level_base_mib", "rss_level_high_mib", "growth_pct",
                "limit_pct", "result"},
               {{seconds / 60, r.steps, r.produced, r.submitted, r.done, r.cancelled, r.failed, r.bad, r.duplicates,
                 r.snapshots, r.snapshot_errors, r.resumed, mib_or_blank(r.heap_warm_peak), mib_or_blank(r.heap_after_peak),
                 static_cast<double>(r.rss_warm_peak) / (1 << 20),
                 static_cast<double>(r.rss_after_peak) / (1 << 20), static_cast<double>(r.rss_level.base) / (1 << 20),
                 static_cast<double>(r.rss_level.high) / (1 << 20), 100 * r.rss_level.growth(),
                 100 * o.growth_limit, r.problems.empty() ? "pass" : fmt::format("FAIL ({} problems)", r.problems.size())}}};
}

std::string soak_svg(const SoakResult& r, const std::string& title) {
  Series rss{"resident memory", "#c33", {}, {}}, heap{"held through malloc", "#36c", {}, {}},
      slots{"slots or sessions in use", "#2a7", {}, {}}, capacity{"capacity", "#888", {}, {}};
  for (const SoakSample& s : r.samples) {
    const double m = s.seconds / 60;
    rss.x.push_back(m), rss.y.push_back(static_cast<double>(s.rss_bytes) / (1 << 20));
    if (s.heap_bytes >= 0) heap.x.push_back(m), heap.y.push_back(static_cast<double>(s.heap_bytes) / (1 << 20));
    slots.x.push_back(m), slots.y.push_back(static_cast<double>(s.in_use));
    capacity.x.push_back(m), capacity.y.push_back(static_cast<double>(s.capacity));
  }
  return side_by_side(line_chart(title + ": memory", "minutes", "MiB",
                                 heap.x.empty() ? std::vector<Series>{rss} : std::vector<Series>{rss, heap}, false),
                      line_chart(title + ": pool", "minutes", "in use", {slots, capacity}, false));
}

}  // namespace mstar::bench
