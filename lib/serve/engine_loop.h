#pragma once
// The engine behind the server: one thread owns the Engine and calls step();
// connection threads open streams (which submits the request), take their
// events and cancel them. Each request's events reach its own stream, by id.
//
//   EngineLoop loop(resolved, {});           // builds the Engine, starts its thread
//   Opened o = loop.open(request_object);    // a connection thread
//   if (o.status == 200 && loop.decide(*o.stream).status == 200)
//     for (Taken t; !t.end;) t = loop.take(*o.stream, 50ms), send(t.events);
//   loop.close(*o.stream);
//
// The engine thread sleeps on a condition variable while the engine is idle
// and nothing is to be cancelled; it steps while any request waits or runs.
//
// A stream holds at most `stream_buffer` unread events. A client that reads
// more slowly than its request produces does not slow the engine or anyone
// else: when its buffer is full its request is cancelled, and the stream ends
// with one error event saying so (the events before it are delivered).
//
// Ids are the clients': one id, one live stream, as in the engine. A
// cancellation is only ever sent to the engine for a request the engine is
// known to hold (taken, not yet ended), so a late cancel can never reach a
// later request that reuses the id.
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include <nlohmann/json.hpp>

#include "config/deployment.h"
#include "engine/engine.h"
#include "serve/metrics.h"

namespace mstar::serve {

using Clock = std::chrono::steady_clock;

struct LoopOptions {
  int64_t max_queue = 64;      // requests waiting for admission (submitted, not yet running) before 429; at least 1
  size_t stream_buffer = 256;  // unread events per stream before its request is cancelled (about 1 KiB each as JSON)
  Progress loading;            // hears the weights load
};

// Why a request was cancelled (the label of its metric).
enum class Cause : uint8_t { none, disconnect, slow_reader, shutdown };

// One request's stream. Every field after `opened` is guarded by the loop's mutex.
class Stream {
 public:
  Stream(std::string id, Clock::time_point opened) : id_(std::move(id)), opened_(opened) {}
  const std::string& id() const { return id_; }

 private:
  friend class EngineLoop;
  enum class State : uint8_t { pending, accepted, refused };
  const std::string id_;
  const Clock::time_point opened_;  // the body was read: time to first chunk counts from here
  std::condition_variable cv_;
  std::deque<nlohmann::json> events_;
  State state_ = State::pending;
  std::string refusal_;            // why, when refused
  int refusal_status_ = 400;       // 400: the engine refused the request; 503: the loop stopped or failed
  bool client_ended_ = false;      // the stream's last event is queued (done, error, or the overflow error)
  bool engine_ended_ = false;      // the engine sent the request's last event; its id is free again
  bool closed_ = false;            // the connection is finished with the stream
  bool output_seen_ = false;       // a chunk or frame was routed (time to first chunk observed)
  Cause cancel_ = Cause::none;     // a cancellation was asked for, and why
  bool cancel_sent_ = false;       // ... and handed to the engine
};

// The outcome of opening a stream: 200 with the stream, or an HTTP status
// and a message (400 a bad request, 429 the queue is full, 503 shutting down).
struct Opened {
  int status = 200;
  std::string error;
  std::shared_ptr<Stream> stream;
};

// Whether the engine took a request: status 200, or the HTTP status and the
// message to answer with.
struct Decision {
  int status = 200;
  std::string error;
};

// Events taken from a stream; `end` when the last of them ends it.
struct Taken {
  std::vector<nlohmann::json> events;
  bool end = false;
};

// What the engine thread last published: counts and occupancy as of the end
// of its latest step (the Engine is only read on its own thread).
struct Snapshot {
  struct Resource {
    std::string key, type, unit;
    int64_t capacity = 0, in_use = 0;
    std::size_t bytes = 0;
  };
  int64_t waiting = 0;   // requests submitted and not yet running (including those not yet taken)
  int64_t running = 0;
  int64_t streams_open = 0;  // streams whose connection has not finished
  std::vector<Resource> resources;
};

// What happened to the streams open at shutdown.
struct ShutdownReport {
  int64_t open = 0;      // streams open when shutdown began
  int64_t finished = 0;  // ... that ended on their own while draining
  int64_t cancelled = 0; // ... that were cancelled
};

class EngineLoop {
 public:
  // Builds the Engine (throws what Engine::create throws) and starts its
  // thread. `on_failure` is called (on the engine thread, once) if a step
  // throws: every stream has then been ended with an error event.
  EngineLoop(const ResolvedDeployment& d, LoopOptions options, std::function<void(const std::string&)> on_failure = {});
  ~EngineLoop();
  EngineLoop(const EngineLoop&) = delete;
  EngineLoop& operator=(const EngineLoop&) = delete;

  // Connection side. `request` is a request object (docs/running.md) with a
  // valid id. Submits it unless its id is live, the queue is full, or the
  // loop is shutting down.
  Opened open(nlohmann::json request);
  // Waits until the engine has taken the request: 200 when it runs or waits
  // for admission; 400 with the engine's error message when the request
  // failed before it was seen waiting or running (nothing was streamed); 503
  // when the loop stopped first.
  Decision decide(Stream& s);
  // Waits up to `wait` for events; returns those queued (possibly none).
  Taken take(Stream& s, std::chrono::milliseconds wait);
  // Asks for the request to be cancelled (a no-op once it ended). Its
  // stream then gets the engine's done event of reason "cancelled", unless
  // the connection is gone.
  void cancel(Stream& s, Cause cause);
  // The connection is finished with the stream; events still routed to it are dropped.
  void close(Stream& s);

  // Shutdown, in order: refuse new streams; wait up to `drain` for open
  // streams to end on their own; cancel the rest; wait up to `linger` for
  // their connections to write the end. Then stop() ends the engine thread.
  ShutdownReport shut(std::chrono::milliseconds drain, std::chrono::milliseconds linger);
  void stop();
  bool shutting_down() const;
  // The engine thread failed (an exception escaped a step): every stream was
  // ended with an error; the message, or "" while it runs.
  std::string failure() const;

  Snapshot snapshot() const;
  // The engine thread's time so far: in steps that ran a batch, and on the
  // server's own work between steps (routing, cancels, occupancy).
  struct ThreadTimes {
    double stepping = 0, serving = 0;
  };
  ThreadTimes thread_times() const;
  // The Prometheus text of the loop's metrics (requests, output, latencies, occupancy).
  std::string metrics_text() const;
  const ResolvedDeployment& deployment() const { return engine_->deployment(); }
  std::string_view unit() const { return unit_; }

 private:
  void run();
  void publish();  // under m_: the snapshot from the engine, on its thread
  void route(nlohmann::json body);
  void end_for_client(Stream& s, nlohmann::json last);
  void forget(Stream& s);  // the engine ended the request: its id is free
  void fail_all(const std::string& message);

  std::unique_ptr<Engine> engine_;
  const LoopOptions options_;
  const std::string unit_;
  const Clock::time_point started_ = Clock::now();
  const std::function<void(const std::string&)> on_failure_;

  mutable std::mutex m_;
  std::condition_variable wake_;     // the engine thread: work, cancels, or stop
  std::condition_variable changed_;  // shutdown: a stream ended or closed
  std::map<std::string, std::shared_ptr<Stream>> live_;  // by id: taken or pending, not yet ended by the engine
  std::vector<std::shared_ptr<Stream>> pending_;        // submitted since the engine thread last looked
  std::vector<std::shared_ptr<Stream>> cancels_;        // cancellations to hand to the engine
  int64_t submitted_ = 0;  // streams opened and not yet ended by the engine
  int64_t open_ = 0;       // streams whose connection has not closed
  bool accepting_ = true;
  bool stop_ = false;
  std::string failure_;
  Snapshot snap_;

  // Metrics, under m_.
  std::map<std::string, uint64_t> done_by_reason_;
  uint64_t failed_ = 0, cancelled_disconnect_ = 0, cancelled_slow_ = 0, cancelled_shutdown_ = 0;
  uint64_t refused_busy_ = 0;  // 429s
  int64_t produced_ = 0, steps_ = 0;
  double serve_seconds_ = 0;  // the engine thread's time outside step()
  Histogram step_seconds_{step_buckets()};
  Histogram first_chunk_seconds_{first_chunk_buckets()};

  std::thread thread_;
};

}  // namespace mstar::serve
