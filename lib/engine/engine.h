#pragma once
// The Engine API: a resolved deployment's model, weights and resources, and
// one continuous-batching scheduler over them, advanced a step at a time by
// its owner. Like llama.cpp's server queue over its step loop: submit and
// cancel may be called from any thread, and land at the start of the next
// step; step() runs on one thread at a time.
//
//   auto engine = mstar::Engine::create(resolved, {});
//   std::string id = engine->submit(request_json);
//   while (!engine->idle())
//     for (const mstar::Event& e : engine->step()) send(e.body);
//
// A request that cannot run gets one error event and harms no other; every
// request ends in exactly one done (reason max_tokens, end_token, frames or
// cancelled) or error event.
#include <cstdint>
#include <deque>
#include <filesystem>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "config/deployment.h"
#include "core/progress.h"
#include "engine/program.h"
#include "engine/snapshot.h"
#include "engine/stats.h"
#include "models/model.h"
#include "models/weights.h"
#include "resources/resource_set.h"

namespace mstar {

class Engine {
 public:
  // Loads the weights (reporting the bytes read to `progress`), builds the
  // model and its resources, and prefills the workload's voices. Throws
  // ConfigError or InputError naming what cannot be built.
  static std::unique_ptr<Engine> create(const ResolvedDeployment& d, const Progress& progress = {});

  // A request: the same JSON object as a request line of mstar-run (without
  // "arrival"). Returns its id, or "" when it has none (the error event then
  // names it "?"). Thread-safe.
  std::string submit(nlohmann::json request);
  // Cancels a waiting or running request: it ends with a done event of
  // reason "cancelled" and its claims are returned at once. Thread-safe.
  void cancel(std::string id);
  // Cancels every request submitted so far, waiting or running, as cancel
  // does each (a process asked to stop). Thread-safe.
  void cancel_all();
  // An input that never became a request (a line that is not JSON, say):
  // one error event naming `id`. Thread-safe.
  void reject(std::string id, std::string message);
  // Saves a waiting or running request to `path` (engine/snapshot.h; the
  // file appears whole or not at all) at the start of the next step; the
  // stream goes on. Event {"event": "snapshot", "id", "path", "bytes"} once
  // it is on disk, or {"event": "error", "op": "snapshot", "id", "path",
  // "message"} (the stream goes on). Thread-safe.
  void snapshot(std::string id, std::filesystem::path path);
  // Continues a saved stream under `id` (the snapshot's own id when empty),
  // as a new arrival: event {"event": "resumed", "id", "path", ...progress},
  // then its stream as if it had never stopped, or one error event (the
  // file is refused with the reason: truncated, corrupted, another format
  // version, model, weights, geometry or voice). Thread-safe.
  void resume(std::filesystem::path path, std::string id = "");

  // Admits, plans, runs the forward, commits; returns the step's events.
  // A step that freed a snapshot's buffers (written, resumed, a resumed
  // stream admitted or dropped) then hands the heap's free pages back.
  std::vector<Event> step();
  // Nothing submitted, waiting or running. Thread-safe.
  bool idle() const;

  // What ran so far (occupancy, resident memory and duration as of now).
  RunStats stats() const;
  // The running counts alone (no copy of the latency samples), for progress.
  const RunStats& counters() const { return stats_; }
  // Seconds serving so far (since create() returned; loading not counted).
  double seconds() const { return std::chrono::duration<double>(Clock::now() - ready_).count(); }
  const ResolvedDeployment& deployment() const { return d_; }
  const Program& program() const { return *program_; }
  ResourceSet& resources() { return *kv_; }
  // Requests waiting for admission and running now.
  int64_t waiting() const { return static_cast<int64_t>(waiting_.size()); }
  int64_t running() const { return static_cast<int64_t>(running_.size()); }

 private:
  explicit Engine(const ResolvedDeployment& d);
  struct Inbox {
    enum class Kind : uint8_t { submit, cancel, cancel_all, reject, snapshot, resume } kind;
    std::string id;
    nlohmann::json request;  // submit
    std::string message;     // reject
    std::filesystem::path path;  // snapshot, resume
  };
  void take(Inbox item, std::vector<Event>& events);
  void take_snapshot(const Inbox& item, std::vector<Event>& events);
  void take_resume(const Inbox& item, std::vector<Event>& events);
  // A failed operation on a stream (cancel, snapshot): an error event that
  // says which operation, so it is never read as the stream's end.
  void op_error(const char* op, const std::string& id, const std::string& message, std::vector<Event>& events,
                const std::filesystem::path& path = {});
  bool in_use(const std::string& id) const;
  Live* find_live(const std::string& id) const;
  void fail(std::unique_ptr<Live> live, const std::string& message, std::vector<Event>& events);
  void error(const std::string& id, const std::string& message, std::vector<Event>& events);
  // Admits the step: every running request plus as many waiting ones, in
  // arrival order, as fit the rows and the resources. Fills step_ and ctx_.
  void admit(std::vector<Event>& events);
  void run_step(std::vector<Event>& events);
  // A live stream's states from a snapshot are about to be freed: loaded at
  // admission, or the stream dropped before it.
  void releasing_states(const Live& live);

  ResolvedDeployment d_;
  std::unique_ptr<Weights> weights_;
  std::unique_ptr<Model> model_;
  std::unique_ptr<ResourceSet> kv_;
  std::unique_ptr<Program> program_;
  Fingerprints fingerprints_;       // what a snapshot is checked against
  std::size_t max_snapshot_bytes_ = 0;

  mutable std::mutex inbox_mutex_;
  std::vector<Inbox> inbox_;

  std::deque<std::unique_ptr<Live>> waiting_;
  std::vector<std::unique_ptr<Live>> running_;
  Step step_;
  StepContext ctx_;
  RunStats stats_;
  Clock::time_point started_;  // create() began: loading the weights, building, prefilling voices
  Clock::time_point ready_;    // create() returned: serving time counts from here
  std::vector<int64_t> peak_in_use_;  // per resource
  // This step freed a snapshot's bytes or a resumed stream's states: MiBs
  // that the heap keeps resident unless handed back (core/heap.h).
  bool freed_snapshot_buffers_ = false;
};

}  // namespace mstar
