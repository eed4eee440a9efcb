#pragma once
// Requests as they arrive: from a deployment's workload or JSON lines
// (`mstar-run --requests FILE|-`), one object per line:
//
//   {"id": "r1", "voice": "alice", "prompt": [5, 9, 2], "max_tokens": 64,
//    "sampling": {"temperature": 0.8, "top_k": 40, "top_p": 0.95, "seed": 7}, "arrival": 0}     (tts)
//   {"id": "w1", "frames": 24, "seed": 3, "controls": [[...], ...], "arrival": 2}                (world)
//   {"cancel": "r1", "arrival": 10}                                                             (either)
//
// "arrival" is the scheduler step at which the request arrives (default 0).
// A malformed request becomes a BadRequest: it fails alone, with its reason.
#include <cstdint>
#include <istream>
#include <string>
#include <variant>
#include <vector>

#include <nlohmann/json.hpp>

#include "models/manifest.h"
#include "models/sampling.h"

namespace mstar {

struct TtsRequest {
  std::string id;
  std::string voice;
  std::vector<int32_t> prompt;  // conditioning tokens, prefilled causally
  int64_t max_tokens = 0;
  SamplingParams sampling;
  int64_t arrival = 0;
};

struct WorldRequest {
  std::string id;
  int64_t frames = 0;
  uint64_t seed = 0;                         // noise (and controls when none are given)
  std::vector<std::vector<float>> controls;  // per frame, cycled; empty: seeded
  int64_t arrival = 0;
};

struct CancelRequest {
  std::string id;
  int64_t arrival = 0;
};

struct BadRequest {
  std::string id;  // the request's id when it has one, else "line N"
  std::string message;
  int64_t arrival = 0;
};

using RequestItem = std::variant<TtsRequest, WorldRequest, CancelRequest, BadRequest>;

RequestItem parse_request(const nlohmann::json& j, const ModelManifest& model, const std::string& where);
// Every line of `in` (blank lines skipped); a line that is not JSON is a BadRequest.
std::vector<RequestItem> read_request_lines(std::istream& in, const ModelManifest& model);

int64_t arrival_of(const RequestItem& r);

}  // namespace mstar
