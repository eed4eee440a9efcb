#include "engine/run.h"

#include <algorithm>

#include <fmt/format.h>

#include "core/errors.h"

namespace mstar {

using nlohmann::json;

RequestLine parse_request_line(json j, const std::string& where) {
  RequestLine line;
  line.id = where;
  if (!j.is_object()) {
    line.kind = RequestLine::Kind::reject;
    line.message = fmt::format("{}: a request must be a JSON object, got {}", where, j.dump().substr(0, 60));
    return line;
  }
  if (auto a = j.find("arrival"); a != j.end()) {
    const bool ok = a->is_number_unsigned() ? a->get<uint64_t>() <= INT32_MAX
                                            : a->is_number_integer() && a->get<int64_t>() >= 0 &&
                                                  a->get<int64_t>() <= INT32_MAX;
    if (!ok) {
      line.kind = RequestLine::Kind::reject;
      line.message = fmt::format("{}: 'arrival' must be a step in [0, {}], got {}", where, INT32_MAX, a->dump());
      if (j.contains("id") && j["id"].is_string()) line.id = j["id"].get<std::string>();
      return line;
    }
    line.arrival = a->get<int64_t>();
    j.erase("arrival");
  }
  if (auto c = j.find("cancel"); c != j.end()) {
    line.kind = c->is_string() && j.size() == 1 ? RequestLine::Kind::cancel : RequestLine::Kind::reject;
    if (line.kind == RequestLine::Kind::cancel) line.id = c->get<std::string>();
    else line.message = fmt::format("{}: a cancellation is {{\"cancel\": \"<request id>\", \"arrival\": <step>}}", where);
    return line;
  }
  if (j.contains("id") && j["id"].is_string() && !j["id"].get<std::string>().empty()) line.id = j["id"].get<std::string>();
  line.body = std::move(j);
  return line;
}

std::vector<RequestLine> read_request_lines(std::istream& in) {
  std::vector<RequestLine> out;
  std::string text;
  for (int64_t n = 1; std::getline(in, text); ++n) {
    if (text.find_first_not_of(" \t\r") == std::string::npos) continue;
    const std::string where = fmt::format("line {}", n);
    json j = json::parse(text, nullptr, false);
    if (j.is_discarded()) {
      out.push_back({RequestLine::Kind::reject, 0, where, {}, fmt::format("{}: not valid JSON", where)});
      continue;
    }
    out.push_back(parse_request_line(std::move(j), where));
  }
  return out;
}

std::vector<RequestLine> workload_lines(const ResolvedDeployment& d) {
  std::vector<RequestLine> out;
  const json& w = d.deployment.workload;
  if (!w.contains("requests")) return out;
  for (size_t i = 0; i < w["requests"].size(); ++i)
    out.push_back(parse_request_line(w["requests"][i], fmt::format("workload request {}", i)));
  return out;
}

RunStats run_lines(Engine& engine, std::vector<RequestLine> lines, const RunOptions& options, const EventSink& events) {
  std::stable_sort(lines.begin(), lines.end(),
                   [](const RequestLine& a, const RequestLine& b) { return a.arrival < b.arrival; });
  size_t next = 0;
  for (int64_t step = 0; next < lines.size() || !engine.idle(); ++step) {
    // Nothing runs until the next arrival: jump to it rather than walk idle steps.
    if (engine.idle() && next < lines.size()) step = std::max(step, lines[next].arrival);
    for (; next < lines.size() && lines[next].arrival <= step; ++next) {
      RequestLine& l = lines[next];
      switch (l.kind) {
        case RequestLine::Kind::request: engine.submit(std::move(l.body)); break;
        case RequestLine::Kind::cancel: engine.cancel(l.id); break;
        case RequestLine::Kind::reject: engine.reject(l.id, l.message); break;
      }
    }
    for (const Event& e : engine.step()) events(e);
    if (options.on_step) options.on_step(engine);
  }
  return engine.stats();
}

}  // namespace mstar
