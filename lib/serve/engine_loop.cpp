#include "serve/engine_loop.h"

#include <fmt/format.h>

#include "core/errors.h"
#include "engine/requests.h"

namespace mstar::serve {

using nlohmann::json;

namespace {

double seconds_since(Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); }

json error_event(const std::string& id, const std::string& message) {
  return json{{"event", "error"}, {"id", id}, {"message", message}};
}

}  // namespace

EngineLoop::EngineLoop(const ResolvedDeployment& d, LoopOptions options,
                       std::function<void(const std::string&)> on_failure)
    : engine_(Engine::create(d, options.loading)), options_(options), unit_(engine_->program().unit()), on_failure_(std::move(on_failure)) {
  // Nothing else runs yet: the snapshot can be read from the engine here.
  publish();
  thread_ = std::thread([this] { run(); });
}

EngineLoop::~EngineLoop() { stop(); }

Opened EngineLoop::open(json request) {
  std::string id;
  try {
    id = request_id(request);
  } catch (const InputError& e) {
    return {400, e.what(), nullptr};
  }
  auto s = std::make_shared<Stream>(id, Clock::now());
  {
    std::lock_guard lock(m_);
    if (!failure_.empty()) return {503, "the engine stopped: " + failure_, nullptr};
    if (!accepting_) return {503, "the server is shutting down", nullptr};
    // The engine's own message for a live id. Checked here because the
    // engine's refusal would carry the id of the live stream, and be routed to it.
    if (live_.count(id))
      return {400, fmt::format("request '{}': a request with this id is already waiting or running", id), nullptr};
    const int64_t waiting = submitted_ - snap_.running;
    if (waiting >= options_.max_queue) {
      ++refused_busy_;
      return {429,
              fmt::format("the queue is full: {} requests wait for admission (the most is {}); retry later", waiting,
                          options_.max_queue),
              nullptr};
    }
    live_[id] = s;
    pending_.push_back(s);
    ++submitted_;
    ++open_;
    // Under m_, so the engine thread's idle check cannot miss it.
    engine_->submit(std::move(request));
  }
  wake_.notify_one();
  return {200, "", std::move(s)};
}

Decision EngineLoop::decide(Stream& s) {
  std::unique_lock lock(m_);
  s.cv_.wait(lock, [&] { return s.state_ != Stream::State::pending; });
  if (s.state_ == Stream::State::refused) return {s.refusal_status_, s.refusal_};
  return {};
}

Taken EngineLoop::take(Stream& s, std::chrono::milliseconds wait) {
  std::unique_lock lock(m_);
  if (s.events_.empty()) s.cv_.wait_for(lock, wait, [&] { return !s.events_.empty(); });
  Taken t;
  t.events.reserve(s.events_.size());
  for (auto& e : s.events_) t.events.push_back(std::move(e));
  s.events_.clear();
  // Nothing is queued after the last event, so once it is queued and taken the stream is over.
  t.end = s.client_ended_;
  return t;
}

void EngineLoop::cancel(Stream& s, Cause cause) {
  {
    std::lock_guard lock(m_);
    if (s.engine_ended_ || s.cancel_ != Cause::none) return;
    auto it = live_.find(s.id());
    MSTAR_ASSERT(it != live_.end() && it->second.get() == &s, "a stream the engine has not ended is live under its id");
    s.cancel_ = cause;
    cancels_.push_back(it->second);
  }
  wake_.notify_one();
}

void EngineLoop::close(Stream& s) {
  std::lock_guard lock(m_);
  if (s.closed_) return;
  s.closed_ = true;
  s.events_.clear();
  --open_;
  changed_.notify_all();
}

void EngineLoop::run() {
  for (;;) {
    std::vector<std::shared_ptr<Stream>> taking;
    Clock::time_point awake;
    {
      std::unique_lock lock(m_);
      wake_.wait(lock, [&] { return stop_ || !cancels_.empty() || !engine_->idle(); });
      if (stop_) return;
      awake = Clock::now();
      // Every event of earlier steps is routed: an accepted stream the engine
      // has not ended is held by the engine, so its cancel cannot miss. A
      // pending one waits until the engine has taken it.
      std::vector<std::shared_ptr<Stream>> later;
      for (auto& s : cancels_) {
        if (s->engine_ended_ || s->cancel_sent_) continue;
        if (s->state_ == Stream::State::pending) {
          later.push_back(std::move(s));
          continue;
        }
        engine_->cancel(s->id());
        s->cancel_sent_ = true;
      }
      cancels_ = std::move(later);
      taking.swap(pending_);
    }
    const auto start = Clock::now();
    std::vector<Event> events;
    try {
      events = engine_->step();
    } catch (const std::exception& e) {
      const std::string message = fmt::format("internal error in a step: {}", e.what());
      {
        std::lock_guard lock(m_);
        fail_all(message);
      }
      if (on_failure_) on_failure_(message);
      return;
    }
    const auto stepped = Clock::now();
    const double seconds = std::chrono::duration<double>(stepped - start).count();
    {
      std::lock_guard lock(m_);
      const RunStats& c = engine_->counters();
      if (c.steps > steps_) step_seconds_.observe(seconds);  // a step that ran a batch, not one that only took requests
      steps_ = c.steps;
      produced_ = c.produced;
      for (Event& e : events) route(std::move(e.body));  // a frame's latents are not sent
      // Taken by this step and not refused in it: waiting or running.
      for (auto& s : taking)
        if (s->state_ == Stream::State::pending) {
          s->state_ = Stream::State::accepted;
          s->cv_.notify_all();
        }
      publish();
      // The server's own share of this thread: before the step and after it.
      serve_seconds_ += std::chrono::duration<double>(start - awake).count() + seconds_since(stepped);
    }
  }
}

void EngineLoop::route(json body) {
  const std::string& id = body["id"].get_ref<const std::string&>();
  auto it = live_.find(id);
  // Every request the engine holds came through open(), under its id; only
  // the engine's own refusals of a request without one ("?") could miss, and
  // open() refuses those first.
  if (it == live_.end()) return;
  const std::shared_ptr<Stream> sp = it->second;  // forget() drops the map's reference
  Stream& s = *sp;
  const std::string& kind = body["event"].get_ref<const std::string&>();
  const bool terminal = kind == "done" || kind == "error";
  if (kind == "error") {
    ++failed_;
  } else if (kind == "done") {
    const std::string& reason = body["reason"].get_ref<const std::string&>();
    if (reason != "cancelled") ++done_by_reason_[reason];
    else if (s.cancel_ == Cause::slow_reader) ++cancelled_slow_;
    else if (s.cancel_ == Cause::shutdown) ++cancelled_shutdown_;
    else ++cancelled_disconnect_;  // the server cancels for no other reason
  }
  if (s.state_ == Stream::State::pending) {
    if (kind == "error") {  // refused in the step that took it: the connection answers 400
      s.state_ = Stream::State::refused;
      s.refusal_ = body["message"].get<std::string>();
      forget(s);
      s.cv_.notify_all();
      return;
    }
    s.state_ = Stream::State::accepted;
    s.cv_.notify_all();
  }
  if (!s.output_seen_ && (kind == "chunk" || kind == "frame")) {
    s.output_seen_ = true;
    first_chunk_seconds_.observe(seconds_since(s.opened_));
  }
  if (terminal) forget(s);
  if (s.client_ended_ || s.closed_) return;
  if (terminal) return end_for_client(s, std::move(body));
  if (s.events_.size() >= options_.stream_buffer) {
    // The client reads more slowly than its request produces. Blocking here
    // would stall every stream; buffering without bound would grow memory.
    if (s.cancel_ == Cause::none) {
      s.cancel_ = Cause::slow_reader;
      cancels_.push_back(sp);
    }
    return end_for_client(s, error_event(id, fmt::format("request '{}': cancelled: the client read too slowly ({} "
                                                         "events unread)",
                                                         id, options_.stream_buffer)));
  }
  s.events_.push_back(std::move(body));
  s.cv_.notify_all();
}

void EngineLoop::end_for_client(Stream& s, json last) {
  s.events_.push_back(std::move(last));
  s.client_ended_ = true;
  s.cv_.notify_all();
}

void EngineLoop::forget(Stream& s) {
  s.engine_ended_ = true;
  live_.erase(s.id());
  --submitted_;
  changed_.notify_all();
}

void EngineLoop::fail_all(const std::string& message) {
  failure_ = message;
  accepting_ = false;
  std::vector<std::shared_ptr<Stream>> all;
  for (auto& [id, s] : live_) all.push_back(s);
  for (auto& s : all) {
    if (s->state_ == Stream::State::pending) {
      s->state_ = Stream::State::refused;
      s->refusal_ = message;
      s->refusal_status_ = 503;
    } else if (!s->client_ended_ && !s->closed_) {
      end_for_client(*s, error_event(s->id(), message));
    }
    forget(*s);
    s->cv_.notify_all();
  }
  pending_.clear();
  cancels_.clear();
  changed_.notify_all();
}

void EngineLoop::publish() {
  snap_.running = engine_->running();
  snap_.resources.clear();
  ResourceSet& kv = engine_->resources();
  for (int64_t i = 0; i < kv.size(); ++i) {
    const mstar::Resource& r = kv.at(i);
    const Occupancy o = r.occupancy();
    snap_.resources.push_back({r.key(), std::string(r.type()), std::string(o.unit), o.capacity, o.in_use, r.memory_bytes()});
  }
}

ShutdownReport EngineLoop::shut(std::chrono::milliseconds drain, std::chrono::milliseconds linger) {
  std::unique_lock lock(m_);
  accepting_ = false;
  ShutdownReport r;
  r.open = static_cast<int64_t>(live_.size());
  changed_.wait_for(lock, drain, [&] { return live_.empty(); });
  r.cancelled = static_cast<int64_t>(live_.size());
  r.finished = r.open - r.cancelled;
  for (auto& [id, s] : live_)
    if (s->cancel_ == Cause::none) {
      s->cancel_ = Cause::shutdown;
      cancels_.push_back(s);
    }
  wake_.notify_one();
  // The cancelled streams end with the engine's done event; their connections write it and close.
  changed_.wait_for(lock, linger, [&] { return live_.empty() && open_ == 0; });
  return r;
}

void EngineLoop::stop() {
  {
    std::lock_guard lock(m_);
    stop_ = true;
  }
  wake_.notify_one();
  if (thread_.joinable()) thread_.join();
  // Anything still live would wait forever for a thread that is gone.
  std::lock_guard lock(m_);
  if (!live_.empty()) {
    const std::string keep = failure_;
    fail_all("the server stopped");
    failure_ = keep;
  }
}

bool EngineLoop::shutting_down() const {
  std::lock_guard lock(m_);
  return !accepting_;
}

std::string EngineLoop::failure() const {
  std::lock_guard lock(m_);
  return failure_;
}

EngineLoop::ThreadTimes EngineLoop::thread_times() const {
  std::lock_guard lock(m_);
  return {step_seconds_.sum(), serve_seconds_};
}

Snapshot EngineLoop::snapshot() const {
  std::lock_guard lock(m_);
  Snapshot s = snap_;
  s.waiting = submitted_ - snap_.running;
  s.streams_open = open_;
  return s;
}

std::string EngineLoop::metrics_text() const {
  const Snapshot snap = snapshot();
  std::string o;
  std::lock_guard lock(m_);
  metric_header(o, "mstar_requests_total", "counter",
                "Requests the engine ended, by outcome: done (by reason), failed, cancelled (by cause).");
  for (const auto& [reason, n] : done_by_reason_)
    o += fmt::format("mstar_requests_total{{outcome=\"done\",reason=\"{}\"}} {}\n", label_value(reason), n);
  o += fmt::format("mstar_requests_total{{outcome=\"failed\"}} {}\n", failed_);
  o += fmt::format("mstar_requests_total{{outcome=\"cancelled\",cause=\"disconnect\"}} {}\n", cancelled_disconnect_);
  o += fmt::format("mstar_requests_total{{outcome=\"cancelled\",cause=\"slow_reader\"}} {}\n", cancelled_slow_);
  o += fmt::format("mstar_requests_total{{outcome=\"cancelled\",cause=\"shutdown\"}} {}\n", cancelled_shutdown_);
  metric_header(o, "mstar_requests_refused_busy_total", "counter", "Requests answered 429: the queue was full.");
  o += fmt::format("mstar_requests_refused_busy_total {}\n", refused_busy_);
  metric_header(o, "mstar_produced_total", "counter", "Tokens or frames produced (unit label).");
  o += fmt::format("mstar_produced_total{{unit=\"{}\"}} {}\n", unit_, produced_);
  metric_header(o, "mstar_steps_total", "counter", "Engine steps that ran a batch.");
  o += fmt::format("mstar_steps_total {}\n", steps_);
  metric_header(o, "mstar_engine_thread_serving_seconds_total", "counter",
                "Time the engine thread spent on the server's work between steps: cancels, routing events, occupancy.");
  o += fmt::format("mstar_engine_thread_serving_seconds_total {}\n", serve_seconds_);
  step_seconds_.render(o, "mstar_step_duration_seconds", "Wall time of an engine step that ran a batch.");
  first_chunk_seconds_.render(o, "mstar_time_to_first_chunk_seconds",
                              "From a request's body being read to its first chunk or frame reaching its stream.");
  metric_header(o, "mstar_requests_waiting", "gauge", "Requests submitted and not yet running (the queue).");
  o += fmt::format("mstar_requests_waiting {}\n", snap.waiting);
  metric_header(o, "mstar_requests_running", "gauge", "Requests running in the engine.");
  o += fmt::format("mstar_requests_running {}\n", snap.running);
  metric_header(o, "mstar_streams_open", "gauge", "Streaming responses whose connection has not finished.");
  o += fmt::format("mstar_streams_open {}\n", snap.streams_open);
  auto labels = [](const Snapshot::Resource& r) {
    return fmt::format("resource=\"{}\",type=\"{}\",unit=\"{}\"", label_value(r.key), r.type, r.unit);
  };
  metric_header(o, "mstar_resource_in_use", "gauge", "Slots (bounded_kv) or sessions (ring_kv) in use, per resource.");
  for (const auto& r : snap.resources) o += fmt::format("mstar_resource_in_use{{{}}} {}\n", labels(r), r.in_use);
  metric_header(o, "mstar_resource_capacity", "gauge", "Slots or sessions a resource has.");
  for (const auto& r : snap.resources) o += fmt::format("mstar_resource_capacity{{{}}} {}\n", labels(r), r.capacity);
  metric_header(o, "mstar_resource_bytes", "gauge", "Resident bytes of a resource's storage.");
  for (const auto& r : snap.resources) o += fmt::format("mstar_resource_bytes{{{}}} {}\n", labels(r), r.bytes);
  metric_header(o, "mstar_resident_memory_bytes", "gauge", "The process's resident set now (/proc/self/statm).");
  o += fmt::format("mstar_resident_memory_bytes {}\n", resident_bytes());
  metric_header(o, "mstar_uptime_seconds", "gauge", "Seconds since the engine was built.");
  o += fmt::format("mstar_uptime_seconds {:.3f}\n", seconds_since(started_));
  return o;
}

}  // namespace mstar::serve
