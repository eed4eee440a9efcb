#pragma once
// Running a deployment to the end, as mstar-run and mstar-bench do: request
// lines (the workload's, or JSON lines) submitted to an Engine at their
// arrival step, the engine stepped until every request has ended, events
// handed to a sink as they happen.
#include <filesystem>
#include <functional>
#include <istream>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "config/deployment.h"
#include "engine/engine.h"
#include "engine/stats.h"

namespace mstar {

// One line of requests: a request, a cancellation, a snapshot or a resume,
// or something that never became any of them (it fails alone, with its
// reason).
struct RequestLine {
  enum class Kind : uint8_t { request, cancel, reject, snapshot, resume };
  Kind kind = Kind::request;
  int64_t arrival = 0;   // the scheduler step it arrives at
  std::string id;        // the request's id, the cancelled id, or "line N"
  nlohmann::json body;   // a request's object, without "arrival"
  std::string message;   // why a rejected line is rejected
  std::string path;      // snapshot, resume: the file
};

//   {"id": "r1", ..., "arrival": 0}                             a request (docs/running.md)
//   {"cancel": "r1", "arrival": 10}                             a cancellation
//   {"op": "snapshot", "id": "r1", "path": "r1.snap", "arrival": 5}   save a stream (it goes on)
//   {"op": "resume", "path": "r1.snap", "id": "r1", "arrival": 0}     continue a saved one ("id" optional)
// A line that is not a JSON object, or whose arrival is wrong, is rejected.
RequestLine parse_request_line(nlohmann::json j, const std::string& where);
// Request lines are bounded: a line longer than this fails alone (an error
// event naming its line; the lines after it run), and input longer than
// kMaxRequestBytes refuses the whole input (InputError naming `name` and the
// line), so /dev/zero or an endless pipe cannot fill memory.
constexpr std::size_t kMaxRequestLineBytes = std::size_t{4} << 20;
constexpr std::size_t kMaxRequestBytes = std::size_t{256} << 20;
// Every line of `in` (blank lines skipped); `name` says where they come from
// in messages ("--requests r.jsonl").
std::vector<RequestLine> read_request_lines(std::istream& in, const std::string& name = "requests");

// Request lines in arrival order, taken one at a time as the run reaches
// them.
class LineSource {
 public:
  virtual ~LineSource() = default;
  // The next line's arrival step; nullopt once every line was taken.
  [[nodiscard]] virtual std::optional<int64_t> next_arrival() const = 0;
  // The next line. Precondition: next_arrival() has a value.
  virtual RequestLine take() = 0;
};
// `lines`, stably sorted by arrival.
std::unique_ptr<LineSource> sorted_lines(std::vector<RequestLine> lines);
// The deployment's workload requests, each made by the model's program when
// the run reaches its arrival (so they cost no memory before that).
std::unique_ptr<LineSource> workload_lines(const ResolvedDeployment& d);

using EventSink = std::function<void(const Event&)>;

struct RunOptions {
  std::function<void(const Engine&)> on_step;  // after every step (progress)
  std::function<void()> after_step;            // after each step's events went to the sink (flush them)
  // Asked before every step: once true, no more lines are taken, every
  // request is cancelled (each ends with done "cancelled"), and the run ends
  // when the engine is idle.
  std::function<bool()> stop;
};

// Hands one line to the engine (its body is moved out of a request line).
void deliver(Engine& engine, RequestLine& line);

RunStats run_lines(Engine& engine, LineSource& lines, const RunOptions& options, const EventSink& events);
RunStats run_lines(Engine& engine, std::vector<RequestLine> lines, const RunOptions& options, const EventSink& events);

}  // namespace mstar
