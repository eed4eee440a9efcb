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
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "config/deployment.h"
#include "engine/program.h"
#include "engine/stats.h"
#include "models/model.h"
#include "models/weights.h"
#include "resources/resource_set.h"

namespace mstar {

class Engine {
 public:
  // Loads the weights, builds the model and its resources, and prefills the
  // workload's voices. Throws ConfigError or InputError naming what cannot
  // be built.
  static std::unique_ptr<Engine> create(const ResolvedDeployment& d);

  // A request: the same JSON object as a request line of mstar-run (without
  // "arrival"). Returns its id, or "" when it has none (the error event then
  // names it "?"). Thread-safe.
  std::string submit(nlohmann::json request);
  // Cancels a waiting or running request: it ends with a done event of
  // reason "cancelled" and its claims are returned at once. Thread-safe.
  void cancel(std::string id);
  // An input that never became a request (a line that is not JSON, say):
  // one error event naming `id`. Thread-safe.
  void reject(std::string id, std::string message);

  // Admits, plans, runs the forward, commits; returns the step's events.
  std::vector<Event> step();
  // Nothing submitted, waiting or running. Thread-safe.
  bool idle() const;

  // What ran so far (occupancy, resident memory and duration as of now).
  RunStats stats() const;
  // The running counts alone (no copy of the latency samples), for progress.
  const RunStats& counters() const { return stats_; }
  double seconds() const { return std::chrono::duration<double>(Clock::now() - started_).count(); }
  const ResolvedDeployment& deployment() const { return d_; }
  const Program& program() const { return *program_; }
  ResourceSet& resources() { return *kv_; }
  // Requests waiting for admission and running now.
  int64_t waiting() const { return static_cast<int64_t>(waiting_.size()); }
  int64_t running() const { return static_cast<int64_t>(running_.size()); }

 private:
  explicit Engine(const ResolvedDeployment& d);
  struct Inbox {
    enum class Kind : uint8_t { submit, cancel, reject } kind;
    std::string id;
    nlohmann::json request;  // submit
    std::string message;     // reject
  };
  void take(Inbox item, std::vector<Event>& events);
  bool in_use(const std::string& id) const;
  void fail(std::unique_ptr<Live> live, const std::string& message, std::vector<Event>& events);
  void error(const std::string& id, const std::string& message, std::vector<Event>& events);
  // Admits the step: every running request plus as many waiting ones, in
  // arrival order, as fit the rows and the resources. Fills step_ and ctx_.
  void admit(std::vector<Event>& events);

  ResolvedDeployment d_;
  std::unique_ptr<Weights> weights_;
  std::unique_ptr<Model> model_;
  std::unique_ptr<ResourceSet> kv_;
  std::unique_ptr<Program> program_;

  mutable std::mutex inbox_mutex_;
  std::vector<Inbox> inbox_;

  std::deque<std::unique_ptr<Live>> waiting_;
  std::vector<std::unique_ptr<Live>> running_;
  Step step_;
  StepContext ctx_;
  RunStats stats_;
  Clock::time_point started_;
  std::vector<int64_t> peak_in_use_;  // per resource
};

}  // namespace mstar
