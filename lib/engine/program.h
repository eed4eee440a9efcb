#pragma once
// What the scheduler needs from a task, whatever family serves it: a program
// turns requests into state, describes each request's part of a step, runs
// the model's forward for the admitted batch, and turns the results into
// events. One scheduler loop (engine.h) drives every program; each task
// registers one (speech: token models, frames: frame models).
#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "config/deployment.h"
#include "models/model.h"
#include "resources/resource_set.h"

namespace mstar {

using Clock = std::chrono::steady_clock;

// One request inside the scheduler; each program subclasses it.
struct Live {
  virtual ~Live() = default;
  std::string id;
  Clock::time_point arrived;
  int64_t first_output_at_step = -1;  // the step of its first token or frame
  bool chunk_sent = false;             // its first chunk (or frame) event went out
  // A resumed request's resource states, loaded once the step that admits
  // it has claimed its slots (empty otherwise).
  std::vector<RequestState> pending_state;
};

// What a request's stream carries: the JSON object sent to clients
// ({"event": "chunk" | "frame" | "done" | "error", "id": ..., ...}) and, for a
// frame, its latents (written to a frames directory when asked, never sent
// inline).
struct Event {
  nlohmann::json body;
  std::vector<float> latents;  // [T, C] for frame events; empty otherwise
};

// Where a program's events go during a step.
using Emit = std::function<void(Event event)>;

class Program {
 public:
  virtual ~Program() = default;
  virtual std::string_view unit() const = 0;  // what it produces: "tokens", "frames"
  virtual int64_t rows_per_request() const = 0;
  // Once, before the first step: shared sources (a speech model's voices).
  virtual void prepare(ResourceSet& kv) = 0;
  // A request's state; throws InputError naming the field when it cannot run.
  virtual std::unique_ptr<Live> start(const nlohmann::json& request) = 0;
  // The request's part of the step being built (its segment, its declared
  // position, its rows).
  virtual void describe(const Live& live, Step& step, StepContext& ctx) const = 0;
  // The forward for the admitted batch, in step order, after planning.
  virtual void forward(ResourceSet& kv, const Step& step, const StepContext& ctx, std::span<Live* const> batch) = 0;
  // After commit: the request's events for this step, and whether it is done.
  struct Emitted {
    int64_t produced = 0;  // tokens or frames made this step
    std::string finished;  // the reason it is done ("max_tokens", ...), "" when it goes on
  };
  virtual Emitted emit(Live& live, const Emit& emit) = 0;
  // How far a request got ({"tokens": n}), for its done event.
  virtual nlohmann::json progress(const Live& live) const = 0;

  // A request's state between steps, as JSON: what a snapshot keeps of it
  // beside its resources' entries.
  virtual nlohmann::json save(const Live& live) const = 0;
  // A request rebuilt from a saved state, to run under `id`. Throws
  // InputError naming the field when the state is not one this program and
  // deployment can continue (a voice that differs, other settings).
  virtual std::unique_ptr<Live> restore(const nlohmann::json& state, const std::string& id) = 0;
};

struct ProgramKind {
  std::string task;  // a family's task
  // Reads the deployment's `workload` block into {"voices", "settings",
  // "requests"} (config/deployment.h's WorkloadReader); "requests" is the
  // generator, {"count": n, ...}, not the requests themselves.
  WorkloadReader read_workload;
  // The generator's request i in 0..count-1, as a request line's object
  // (with its "arrival"). Made as each arrives (run.h's workload_lines), so
  // a workload of 100,000 requests costs no memory before it runs.
  std::function<nlohmann::json(const nlohmann::json& requests, int64_t i)> workload_request;
  std::function<std::unique_ptr<Program>(Model& model, const ResolvedDeployment& d)> make;
};

const ProgramKind* find_program(std::string_view task);

// Reads the workload of whichever task the deployment's model serves.
std::optional<nlohmann::json> read_workload(const YAML::Node& block, YamlContext& ctx, const ModelManifest& model,
                                            const std::filesystem::path& config_dir);

}  // namespace mstar

namespace mstar {

// A deployment resolved the way the engine runs it: config/deployment.h's
// reader with the workload read by the model's program. mstar-run and
// mstar-check both load through here, so check accepts what run serves.
std::optional<ResolvedDeployment> load_deployment(const std::filesystem::path& path,
                                                  const std::vector<SetOverride>& sets, Diagnostics& diags);

}  // namespace mstar
