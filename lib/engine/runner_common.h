#pragma once
// What the tts and world run loops share: reporting a failed request,
// handling the arrivals that are not new work (bad lines, cancellations),
// and closing a step's statistics.
#include <chrono>
#include <string>
#include <variant>

#include <fmt/format.h>

#include "engine/batcher.h"
#include "engine/requests.h"
#include "engine/run.h"
#include "engine/stats.h"
#include "resources/resource.h"

namespace mstar {

class RunReporter {
 public:
  using Clock = std::chrono::steady_clock;
  RunReporter(RunStats& st, const EventSink& events) : st_(st), events_(events), t0_(Clock::now()) {}

  void error(const std::string& id, const std::string& message) {
    ++st_.requests_failed;
    events_({{"event", "error"}, {"id", id}, {"message", message}});
  }

  // Handles a bad request or a cancellation; returns false for new work,
  // which the caller admits. A cancelled request's claim is returned at once.
  // progress(live) says how far it got ({"tokens": n} or {"frames": n}).
  template <class Live, class Progress>
  bool control(const RequestItem& item, Batcher<Live>& batcher, Resource& kv, Progress&& progress) {
    if (const auto* bad = std::get_if<BadRequest>(&item)) {
      error(bad->id, bad->message);
      return true;
    }
    const auto* c = std::get_if<CancelRequest>(&item);
    if (!c) return false;
    const bool found = batcher.drop(c->id, "cancelled", [&](Live& l, const std::string&) {
      kv.remove_request(l.id());
      ++st_.requests_cancelled;
      nlohmann::json done{{"event", "done"}, {"id", l.id()}, {"reason", "cancelled"}};
      done.update(progress(l));
      events_(done);
    });
    if (!found) error(c->id, fmt::format("cancel: no waiting or running request '{}'", c->id));
    return true;
  }

  // Closes a step begun at `start` whose forward took forward_ms.
  void end_step(Clock::time_point start, double forward_ms, const RunOptions& options) {
    st_.step_ms.push_back(std::chrono::duration<double, std::milli>(Clock::now() - start).count());
    st_.host_ms.push_back(st_.step_ms.back() - forward_ms);
    ++st_.steps;
    st_.seconds = elapsed();
    if (options.on_step) options.on_step(st_);
  }

  // A request finished: its done event (with `fields`), and its claim back at once.
  void done(Resource& kv, const std::string& id, const nlohmann::json& fields) {
    nlohmann::json e{{"event", "done"}, {"id", id}};
    e.update(fields);
    events_(e);
    ++st_.requests_done;
    kv.remove_request(id);
  }

  // The run is over: its duration, the resource's occupancy and the peak RSS.
  void finish(ResourceUsage usage) {
    st_.seconds = elapsed();
    st_.resources.push_back(std::move(usage));
    st_.peak_rss_bytes = peak_rss_bytes();
  }

  double elapsed() const { return std::chrono::duration<double>(Clock::now() - t0_).count(); }

 private:
  RunStats& st_;
  const EventSink& events_;
  Clock::time_point t0_;
};

}  // namespace mstar
