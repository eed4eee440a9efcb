#include "engine/run.h"

#include <algorithm>

#include <fmt/format.h>

#include "core/errors.h"
#include "core/files.h"
#include "core/json_text.h"
#include "engine/program.h"

namespace mstar {

using nlohmann::json;

RequestLine parse_request_line(json j, const std::string& where) {
  RequestLine line;
  line.id = where;
  if (!j.is_object()) {
    line.kind = RequestLine::Kind::reject;
    line.message = fmt::format("{}: a request must be a JSON object, got {}", where, json_excerpt(j));
    return line;
  }
  if (auto a = j.find("arrival"); a != j.end()) {
    const bool ok = a->is_number_unsigned() ? a->get<uint64_t>() <= INT32_MAX
                                            : a->is_number_integer() && a->get<int64_t>() >= 0 &&
                                                  a->get<int64_t>() <= INT32_MAX;
    if (!ok) {
      line.kind = RequestLine::Kind::reject;
      line.message = fmt::format("{}: 'arrival' must be a step in [0, {}], got {}", where, INT32_MAX, json_excerpt(*a));
      if (j.contains("id") && j["id"].is_string()) line.id = j["id"].get<std::string>();
      return line;
    }
    line.arrival = a->get<int64_t>();
    j.erase("arrival");
  }
  if (auto op = j.find("op"); op != j.end()) {
    const std::string name = op->is_string() ? op->get<std::string>() : std::string();
    auto text = [&](const char* key) {
      auto it = j.find(key);
      return it != j.end() && it->is_string() ? it->get<std::string>() : std::string();
    };
    // A malformed operation is rejected under its line, never under the id
    // it names: an error event for a running request's id would read as
    // that stream's end.
    line.kind = RequestLine::Kind::reject;
    bool known_keys = true;
    for (const auto& [k, v] : j.items()) known_keys = known_keys && (k == "op" || k == "id" || k == "path");
    if (name == "snapshot" && known_keys && !text("id").empty() && !text("path").empty()) {
      line.kind = RequestLine::Kind::snapshot;
      line.id = text("id");
    } else if (name == "resume" && known_keys && !text("path").empty() && (!j.contains("id") || !text("id").empty())) {
      line.kind = RequestLine::Kind::resume;
      line.id = text("id");
    } else {
      line.message = fmt::format("{}: an operation is {{\"op\": \"snapshot\", \"id\": ..., \"path\": ...}} or "
                                 "{{\"op\": \"resume\", \"path\": ..., \"id\": ...}} (id optional), got {}",
                                 where, json_excerpt(j));
      return line;
    }
    line.path = text("path");
    return line;
  }
  if (auto c = j.find("cancel"); c != j.end()) {
    line.kind = c->is_string() && j.size() == 1 ? RequestLine::Kind::cancel : RequestLine::Kind::reject;
    if (line.kind == RequestLine::Kind::cancel) line.id = c->get<std::string>();
    else line.message = fmt::format("{}: a cancellation is {{\"cancel\": \"<request id>\", \"arrival\": <step>}}", where);
    return line;
  }
  if (!j.contains("id") || !j["id"].is_string() || j["id"].get<std::string>().empty()) {
    // No id to report it under: it fails under its line, which names it.
    line.kind = RequestLine::Kind::reject;
    line.id = where;
    line.message = fmt::format("{}: a request needs a non-empty string 'id'", where);
    return line;
  }
  line.id = j["id"].get<std::string>();
  line.body = std::move(j);
  return line;
}

std::vector<RequestLine> read_request_lines(std::istream& in, const std::string& name) {
  std::vector<RequestLine> out;
  std::string text, why;
  LineReader lines(in, name, kMaxRequestLineBytes, kMaxRequestBytes);
  for (LineRead got; (got = lines.next(text)) != LineRead::end;) {
    const std::string where = fmt::format("line {}", lines.line_number());
    if (got == LineRead::too_long) {
      out.push_back({RequestLine::Kind::reject, 0, where, {},
                     fmt::format("{}: longer than the limit of {} (the line is skipped)", where,
                                 bytes_text(kMaxRequestLineBytes)),
                     {}});
      continue;
    }
    if (text.find_first_not_of(" \t\r") == std::string::npos) continue;
    auto j = try_parse_json(text, why);
    if (!j) {
      out.push_back({RequestLine::Kind::reject, 0, where, {}, fmt::format("{}: {}", where, why), {}});
      continue;
    }
    out.push_back(parse_request_line(std::move(*j), where));
  }
  return out;
}

namespace {

class SortedLines final : public LineSource {
 public:
  explicit SortedLines(std::vector<RequestLine> lines) : lines_(std::move(lines)) {
    std::stable_sort(lines_.begin(), lines_.end(),
                     [](const RequestLine& a, const RequestLine& b) { return a.arrival < b.arrival; });
  }
  std::optional<int64_t> next_arrival() const override {
    return next_ < lines_.size() ? std::optional<int64_t>(lines_[next_].arrival) : std::nullopt;
  }
  RequestLine take() override {
    MSTAR_ASSERT(next_ < lines_.size(), "take() past the last line");
    return std::move(lines_[next_++]);
  }

 private:
  std::vector<RequestLine> lines_;
  size_t next_ = 0;
};

// Generated requests arrive every `arrival_every` steps (0 or more), so index
// order is arrival order.
class WorkloadLines final : public LineSource {
 public:
  WorkloadLines(const ProgramKind& program, json generator)
      : program_(program), generator_(std::move(generator)), count_(generator_["count"].get<int64_t>()),
        every_(generator_["arrival_every"].get<int64_t>()) {}
  std::optional<int64_t> next_arrival() const override {
    return next_ < count_ ? std::optional<int64_t>(next_ * every_) : std::nullopt;
  }
  RequestLine take() override {
    MSTAR_ASSERT(next_ < count_, "take() past the last workload request");
    const int64_t i = next_++;
    return parse_request_line(program_.workload_request(generator_, i), fmt::format("workload request {}", i));
  }

 private:
  const ProgramKind& program_;
  json generator_;  // workload["requests"]: {"count", "arrival_every", ...}
  int64_t count_, every_;
  int64_t next_ = 0;
};

}  // namespace

std::unique_ptr<LineSource> sorted_lines(std::vector<RequestLine> lines) {
  return std::make_unique<SortedLines>(std::move(lines));
}

std::unique_ptr<LineSource> workload_lines(const ResolvedDeployment& d) {
  const json& w = d.deployment.workload;
  if (!w.contains("requests")) return sorted_lines({});
  const ProgramKind* program = find_program(d.model.family->task);
  MSTAR_ASSERT(program, fmt::format("no program serves task '{}'", d.model.family->task));
  return std::make_unique<WorkloadLines>(*program, w["requests"]);
}

void deliver(Engine& engine, RequestLine& l) {
  switch (l.kind) {
    case RequestLine::Kind::request: engine.submit(std::move(l.body)); break;
    case RequestLine::Kind::cancel: engine.cancel(l.id); break;
    case RequestLine::Kind::reject: engine.reject(l.id, l.message); break;
    case RequestLine::Kind::snapshot: engine.snapshot(l.id, l.path); break;
    case RequestLine::Kind::resume: engine.resume(l.path, l.id); break;
  }
}

RunStats run_lines(Engine& engine, LineSource& lines, const RunOptions& options, const EventSink& events) {
  bool stopping = false;
  for (int64_t step = 0; (!stopping && lines.next_arrival()) || !engine.idle(); ++step) {
    if (!stopping && options.stop && options.stop()) {
      stopping = true;
      engine.cancel_all();
    }
    // Nothing runs until the next arrival: jump to it rather than walk idle steps.
    if (!stopping && engine.idle() && lines.next_arrival()) step = std::max(step, *lines.next_arrival());
    while (!stopping && lines.next_arrival() && *lines.next_arrival() <= step) {
      RequestLine line = lines.take();
      deliver(engine, line);
    }
    for (const Event& e : engine.step()) events(e);
    if (options.after_step) options.after_step();
    if (options.on_step) options.on_step(engine);
  }
  return engine.stats();
}

RunStats run_lines(Engine& engine, std::vector<RequestLine> lines, const RunOptions& options, const EventSink& events) {
  return run_lines(engine, *sorted_lines(std::move(lines)), options, events);
}

}  // namespace mstar
