#pragma once
// Running a deployment to the end, as mstar-run and mstar-bench do: request
// lines (the workload's, or JSON lines) submitted to an Engine at their
// arrival step, the engine stepped until every request has ended, events
// handed to a sink as they happen.
#include <filesystem>
#include <functional>
#include <istream>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "config/deployment.h"
#include "engine/engine.h"
#include "engine/stats.h"

namespace mstar {

// One line of requests: a request, a cancellation, or something that never
// became either (it fails alone, with its reason).
struct RequestLine {
  enum class Kind : uint8_t { request, cancel, reject };
  Kind kind = Kind::request;
  int64_t arrival = 0;   // the scheduler step it arrives at
  std::string id;        // the request's id, the cancelled id, or "line N"
  nlohmann::json body;   // a request's object, without "arrival"
  std::string message;   // why a rejected line is rejected
};

//   {"id": "r1", ..., "arrival": 0}   a request (docs/running.md)
//   {"cancel": "r1", "arrival": 10}   a cancellation
// A line that is not a JSON object, or whose arrival is wrong, is rejected.
RequestLine parse_request_line(nlohmann::json j, const std::string& where);
// Every line of `in` (blank lines skipped).
std::vector<RequestLine> read_request_lines(std::istream& in);
// The deployment's workload requests.
std::vector<RequestLine> workload_lines(const ResolvedDeployment& d);

using EventSink = std::function<void(const Event&)>;

struct RunOptions {
  std::function<void(const Engine&)> on_step;  // after every step (progress)
};

RunStats run_lines(Engine& engine, std::vector<RequestLine> lines, const RunOptions& options, const EventSink& events);

}  // namespace mstar
