#pragma once
// The fuzz harnesses' engines: the small speech and frame deployments of
// fuzz/data, built once per process, and a driver that feeds request lines
// to one the way run_lines does, then checks what every run must keep:
// every submitted request ends in exactly one done or error event, and
// every slot and session is back when the engine is idle.
#include <map>
#include <memory>
#include <set>
#include <sstream>

#include "common.h"
#include "core/errors.h"
#include "core/json_text.h"
#include "engine/engine.h"
#include "engine/program.h"
#include "engine/requests.h"
#include "engine/run.h"

namespace mstar::fuzz {

inline Engine& engine(bool frames) {
  static std::unique_ptr<Engine> e[2];
  auto& slot = e[frames ? 1 : 0];
  if (!slot) {
    Diagnostics diags;
    auto d = load_deployment(source_dir() / "fuzz" / "data" / (frames ? "fuzz-frames.yaml" : "fuzz-speech.yaml"), {},
                             diags);
    if (!d) broken("the fuzz deployment does not load: " + diags.str());
    slot = Engine::create(*d);
  }
  return *slot;
}

// Feeds `lines` to the engine for at most `budget` steps (arrivals past it
// land at the last), cancels whatever still runs, steps until idle, and
// checks the invariants. With map_paths, snapshot and resume paths are
// mapped into the scratch directory (four files, so a resume can find an
// earlier snapshot), never a path from the input.
inline void drive(Engine& engine, std::vector<RequestLine> lines, int64_t budget, bool map_paths = true) {
  std::map<std::string, int> submitted, ended;
  std::set<std::string> ids;
  for (RequestLine& l : lines) {
    l.arrival = std::min(l.arrival, budget - 1);
    if (map_paths && (l.kind == RequestLine::Kind::snapshot || l.kind == RequestLine::Kind::resume))
      l.path = (scratch() / ("snap-" + std::to_string(std::hash<std::string>{}(l.path) % 4))).string();
    if (l.kind == RequestLine::Kind::resume && l.id.empty()) l.id = "resumed";
    std::string id = l.id;
    if (l.kind == RequestLine::Kind::request) {
      try {
        id = request_id(l.body);
      } catch (const InputError&) {
        id = "?";
      }
    }
    if (l.kind == RequestLine::Kind::request || l.kind == RequestLine::Kind::reject ||
        l.kind == RequestLine::Kind::resume) {
      ++submitted[id];
      ids.insert(id);
    }
  }
  std::stable_sort(lines.begin(), lines.end(), [](const auto& a, const auto& b) { return a.arrival < b.arrival; });
  auto note = [&](const std::vector<Event>& events) {
    for (const Event& e : events) {
      const std::string kind = e.body["event"];
      if ((kind == "done" || kind == "error") && !e.body.contains("op")) ++ended[e.body["id"].get<std::string>()];
      (void)dump_json(e.body);
    }
  };
  size_t next = 0;
  for (int64_t step = 0; step < budget; ++step) {
    for (; next < lines.size() && lines[next].arrival <= step; ++next) {
      deliver(engine, lines[next]);
    }
    note(engine.step());
  }
  for (const std::string& id : ids) engine.cancel(id);
  for (int i = 0; !engine.idle(); ++i) {
    if (i > 100) broken("the engine is not idle 100 steps after every request was cancelled");
    note(engine.step());
  }
  for (const auto& [id, n] : submitted)
    if (ended[id] != n)
      broken("request '" + id + "' was submitted " + std::to_string(n) + " times but ended " + std::to_string(ended[id]));
  for (const auto& [id, n] : ended)
    if (!submitted.count(id)) broken("request '" + id + "' ended but was never submitted");
  for (int64_t i = 0; i < engine.resources().size(); ++i) {
    const Resource& r = engine.resources().at(i);
    if (r.occupancy().in_use != 0 || r.requests() != 0)
      broken("resource '" + r.key() + "' holds " + std::to_string(r.occupancy().in_use) + " claims and " +
             std::to_string(r.requests()) + " requests when the engine is idle");
  }
}

}  // namespace mstar::fuzz
