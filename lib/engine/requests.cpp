#include "engine/requests.h"

#include <cmath>

#include <fmt/format.h>

#include "core/errors.h"

namespace mstar {

namespace {

using nlohmann::json;

[[noreturn]] void bad(const std::string& what) { throw InputError(what); }

int64_t get_int(const json& j, const char* key, int64_t lo, int64_t hi, const std::string& who, int64_t dflt,
                bool required) {
  auto it = j.find(key);
  if (it == j.end()) {
    if (required) bad(fmt::format("{}: missing '{}'", who, key));
    return dflt;
  }
  if (!it->is_number_integer()) bad(fmt::format("{}: '{}' must be an integer, got {}", who, key, it->dump()));
  const auto v = it->get<int64_t>();
  if (v < lo || v > hi) bad(fmt::format("{}: '{}' must be in [{}, {}], got {}", who, key, lo, hi, v));
  return v;
}

double get_real(const json& j, const char* key, const std::string& who, double dflt) {
  auto it = j.find(key);
  if (it == j.end()) return dflt;
  if (!it->is_number()) bad(fmt::format("{}: '{}' must be a number, got {}", who, key, it->dump()));
  return it->get<double>();
}

}  // namespace

int64_t arrival_of(const RequestItem& r) {
  return std::visit([](const auto& x) { return x.arrival; }, r);
}

RequestItem parse_request(const json& j, const ModelManifest& model, const std::string& where) {
  std::string id = where;
  int64_t arrival = 0;
  try {
    if (!j.is_object()) bad(fmt::format("{}: a request must be a JSON object, got {}", where, j.dump().substr(0, 60)));
    if (j.contains("arrival")) arrival = get_int(j, "arrival", 0, INT32_MAX, where, 0, true);
    if (j.contains("cancel")) {
      if (!j["cancel"].is_string()) bad(fmt::format("{}: 'cancel' must name a request id", where));
      return CancelRequest{j["cancel"].get<std::string>(), arrival};
    }
    if (!j.contains("id") || !j["id"].is_string() || j["id"].get<std::string>().empty())
      bad(fmt::format("{}: a request needs a non-empty string 'id'", where));
    id = j["id"].get<std::string>();
    const std::string who = fmt::format("request '{}'", id);
    if (model.kind == ModelKind::tts) {
      for (const auto& [k, v] : j.items())
        if (k != "id" && k != "voice" && k != "prompt" && k != "max_tokens" && k != "sampling" && k != "arrival")
          bad(fmt::format("{}: unknown field '{}'", who, k));
      TtsRequest r;
      r.id = id;
      r.arrival = arrival;
      if (!j.contains("voice") || !j["voice"].is_string()) bad(fmt::format("{}: needs a 'voice' name", who));
      r.voice = j["voice"].get<std::string>();
      if (!j.contains("prompt") || !j["prompt"].is_array()) bad(fmt::format("{}: needs a 'prompt' list of tokens", who));
      if (j["prompt"].empty()) bad(fmt::format("{}: the prompt is empty; it needs at least one token", who));
      for (const auto& t : j["prompt"]) {
        if (!t.is_number_integer() || t.get<int64_t>() < 0 || t.get<int64_t>() >= model.arch.tts.vocab_size)
          bad(fmt::format("{}: prompt token {} is not an id in [0, {})", who, t.dump(), model.arch.tts.vocab_size));
        r.prompt.push_back(t.get<int32_t>());
      }
      r.max_tokens = get_int(j, "max_tokens", 1, 1 << 24, who, 0, true);
      if (j.contains("sampling")) {
        const json& s = j["sampling"];
        if (!s.is_object()) bad(fmt::format("{}: 'sampling' must be an object", who));
        for (const auto& [k, v] : s.items())
          if (k != "temperature" && k != "top_k" && k != "top_p" && k != "seed")
            bad(fmt::format("{}: unknown sampling field '{}'", who, k));
        r.sampling.temperature = get_real(s, "temperature", who + " sampling", 0.0);
        r.sampling.top_p = get_real(s, "top_p", who + " sampling", 1.0);
        r.sampling.top_k = get_int(s, "top_k", INT64_MIN, INT64_MAX, who + " sampling", 0, false);
        r.sampling.seed = static_cast<uint64_t>(get_int(s, "seed", 0, INT64_MAX, who + " sampling", 0, false));
      }
      r.sampling.validate(who + " sampling");
      return r;
    }
    for (const auto& [k, v] : j.items())
      if (k != "id" && k != "frames" && k != "seed" && k != "controls" && k != "arrival")
        bad(fmt::format("{}: unknown field '{}'", who, k));
    WorldRequest r;
    r.id = id;
    r.arrival = arrival;
    r.frames = get_int(j, "frames", 1, 1 << 24, who, 0, true);
    r.seed = static_cast<uint64_t>(get_int(j, "seed", 0, INT64_MAX, who, 0, false));
    if (j.contains("controls")) {
      const json& c = j["controls"];
      if (!c.is_array() || c.empty()) bad(fmt::format("{}: 'controls' must be a non-empty list of vectors", who));
      for (size_t f = 0; f < c.size(); ++f) {
        if (!c[f].is_array() || static_cast<int64_t>(c[f].size()) != model.arch.world.control_dim)
          bad(fmt::format("{}: controls[{}] must hold {} numbers", who, f, model.arch.world.control_dim));
        std::vector<float> v;
        for (const auto& x : c[f]) {
          if (!x.is_number() || !std::isfinite(x.get<double>())) bad(fmt::format("{}: controls[{}] has {}", who, f, x.dump()));
          v.push_back(x.get<float>());
        }
        r.controls.push_back(std::move(v));
      }
    }
    return r;
  } catch (const InputError& e) {
    return BadRequest{id, e.what(), arrival};
  }
}

std::vector<RequestItem> read_request_lines(std::istream& in, const ModelManifest& model) {
  std::vector<RequestItem> out;
  std::string line;
  for (int64_t n = 1; std::getline(in, line); ++n) {
    if (line.find_first_not_of(" \t\r") == std::string::npos) continue;
    const std::string where = fmt::format("line {}", n);
    json j = json::parse(line, nullptr, false);
    if (j.is_discarded()) {
      out.push_back(BadRequest{where, fmt::format("{}: not valid JSON", where), 0});
      continue;
    }
    out.push_back(parse_request(j, model, where));
  }
  return out;
}

}  // namespace mstar
