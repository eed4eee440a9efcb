#include "engine/frame_program.h"

#include <cmath>
#include <random>

#include <fmt/format.h>

#include "core/json_text.h"
#include "core/errors.h"
#include "engine/requests.h"
#include "engine/workload.h"

namespace mstar {

namespace {

using nlohmann::json;

// Seeded Gaussian noise for one frame of one rollout.
void frame_noise(uint64_t seed, int64_t frame, float* out, int64_t n) {
  std::mt19937_64 gen(seed * 0x9E3779B97F4A7C15ull + static_cast<uint64_t>(frame));
  std::normal_distribution<float> dist;
  for (int64_t i = 0; i < n; ++i) out[i] = dist(gen);
}

std::string checksum(const float* x, size_t n) {
  uint64_t h = 0xcbf29ce484222325ull;
  const auto* b = reinterpret_cast<const unsigned char*>(x);
  for (size_t i = 0; i < n * sizeof(float); ++i) h = (h ^ b[i]) * 0x100000001b3ull;
  return fmt::format("{:016x}", h);
}

struct FrameLive final : Live {
  int64_t frames = 0;
  uint64_t seed = 0;
  std::vector<std::vector<float>> controls;  // per frame, cycled; empty: seeded
  int64_t frame = 0;                         // the next frame to make
  std::vector<float> latents;                // this step's frame, [T, C]
};

class FrameProgram final : public Program {
 public:
  explicit FrameProgram(FrameModel& model) : model_(model) {}

  std::string_view unit() const override { return "frames"; }
  int64_t rows_per_request() const override { return 1; }
  void prepare(ResourceSet&) override {}

  std::unique_ptr<Live> start(const json& request) override {
    const std::string id = request_id(request);
    const JsonFields f(request, fmt::format("request '{}'", id));
    f.only({"id", "frames", "seed", "controls"});
    auto live = std::make_unique<FrameLive>();
    live->id = id;
    live->frames = f.integer("frames", 1, 1 << 24);
    live->seed = static_cast<uint64_t>(f.integer("seed", 0, INT32_MAX, 0));
    if (f.has("controls")) live->controls = controls(f.at("controls"), f.who());
    return live;
  }

  void describe(const Live& l, Step& step, StepContext& ctx) const override {
    const auto& f = static_cast<const FrameLive&>(l);
    step.segments.push_back({f.id, "frame", model_.tokens_per_frame()});
    step.frames[f.id] = f.frame;
    ctx.add_rows(f.id, 1);
  }

  void forward(ResourceSet& kv, const Step&, const StepContext&, std::span<Live* const> batch) override {
    const auto B = static_cast<int64_t>(batch.size());
    const int64_t T = model_.tokens_per_frame(), C = model_.channels(), cd = model_.control_dim();
    std::vector<int64_t> frame_pos;
    std::vector<float> noise(static_cast<size_t>(B * T * C)), controls(static_cast<size_t>(B * cd));
    for (int64_t b = 0; b < B; ++b) {
      const auto& l = static_cast<const FrameLive&>(*batch[static_cast<size_t>(b)]);
      frame_pos.push_back(l.frame);
      frame_noise(l.seed, l.frame, noise.data() + b * T * C, T * C);
      if (cd == 0) continue;
      if (!l.controls.empty()) {
        const auto& c = l.controls[static_cast<size_t>(l.frame) % l.controls.size()];
        std::copy(c.begin(), c.end(), controls.begin() + b * cd);
      } else {
        frame_noise(l.seed ^ 0xC0117801ull, l.frame, controls.data() + b * cd, cd);  // a seeded control stream
      }
    }
    const std::vector<float> frames = model_.generate(kv, frame_pos, noise, controls);
    for (int64_t b = 0; b < B; ++b) {
      auto& l = static_cast<FrameLive&>(*batch[static_cast<size_t>(b)]);
      l.latents.assign(frames.begin() + b * T * C, frames.begin() + (b + 1) * T * C);
    }
  }

  Emitted emit(Live& l, const Emit& emit) override {
    auto& f = static_cast<FrameLive&>(l);
    const int64_t T = model_.tokens_per_frame(), C = model_.channels();
    const float* x = f.latents.data();
    double sum = 0, sq = 0, mn = INFINITY, mx = -INFINITY;
    for (int64_t i = 0; i < T * C; ++i) {
      sum += x[i], sq += static_cast<double>(x[i]) * x[i];
      mn = std::min<double>(mn, x[i]), mx = std::max<double>(mx, x[i]);
    }
    const double mean = sum / static_cast<double>(T * C);
    emit({json{{"event", "frame"}, {"id", f.id}, {"frame", f.frame}, {"shape", {T, C}},
               {"checksum", checksum(x, static_cast<size_t>(T * C))}, {"mean", mean},
               {"std", std::sqrt(std::max(0.0, sq / static_cast<double>(T * C) - mean * mean))}, {"min", mn},
               {"max", mx}},
          std::move(f.latents)});
    ++f.frame;
    return {1, f.frame >= f.frames ? "frames" : ""};
  }

  json progress(const Live& l) const override { return {{"frames", static_cast<const FrameLive&>(l).frame}}; }

  json save(const Live& l) const override {
    const auto& f = static_cast<const FrameLive&>(l);
    json j{{"frames", f.frames}, {"seed", f.seed}, {"frame", f.frame}};
    if (!f.controls.empty()) j["controls"] = f.controls;
    return j;
  }

  std::unique_ptr<Live> restore(const json& state, const std::string& id) override {
    const JsonFields f(state, fmt::format("resume '{}': the stream's state", id));
    f.only({"frames", "seed", "frame", "controls"});
    auto live = std::make_unique<FrameLive>();
    live->id = id;
    live->frames = f.integer("frames", 1, 1 << 24);
    live->seed = static_cast<uint64_t>(f.integer("seed", 0, INT32_MAX));
    live->frame = f.integer("frame", 0, live->frames - 1);
    if (f.has("controls")) live->controls = controls(f.at("controls"), f.who());
    return live;
  }

 private:
  // A request's controls: a non-empty list of vectors of control_dim
  // numbers, each finite in f32 (1e39 would become infinity).
  std::vector<std::vector<float>> controls(const json& c, const std::string& who) const {
    const int64_t cd = model_.control_dim();
    if (!c.is_array() || c.empty()) throw InputError(fmt::format("{}: 'controls' must be a non-empty list of vectors", who));
    std::vector<std::vector<float>> out;
    for (size_t i = 0; i < c.size(); ++i) {
      if (!c[i].is_array() || static_cast<int64_t>(c[i].size()) != cd)
        throw InputError(fmt::format("{}: controls[{}] must hold {} numbers", who, i, cd));
      std::vector<float> v;
      for (const auto& x : c[i]) {
        if (!x.is_number() || !std::isfinite(x.get<double>()) || std::fabs(x.get<double>()) > 3.0e38)
          throw InputError(fmt::format("{}: controls[{}] has {}, not a finite f32 number", who, i, json_excerpt(x)));
        v.push_back(x.get<float>());
      }
      out.push_back(std::move(v));
    }
    return out;
  }

  FrameModel& model_;
};

std::optional<json> read_frame_workload(const YAML::Node& n, YamlContext& ctx, const ModelManifest&,
                                        const std::filesystem::path&) {
  auto e = read_map(n, ctx, "workload", {"requests"});
  if (!e) return std::nullopt;
  bool ok = e->items.size() == n.size();
  json out{{"voices", json::object()}, {"settings", json::object()}, {"requests", {{"count", 0}}}};
  const YAML::Node* r = e->find("requests");
  if (!r) return ok ? std::optional<json>(out) : std::nullopt;
  RequestsBlock b;
  int64_t frames = 8;
  ok = read_requests_block(*r, ctx, {"frames"}, b,
                           [&](const std::string& k, const YAML::Node& v) {
                             return read_yaml(v, ctx, "workload.requests." + k, frames, Range{1, 1 << 24});
                           }) &&
       ok;
  if (!ok) return std::nullopt;
  out["requests"] = {{"count", b.count}, {"seed", b.seed}, {"arrival_every", b.arrival_every}, {"frames", frames}};
  return out;
}

// Request i of the generator read_frame_workload wrote.
json frame_workload_request(const json& g, int64_t i) {
  return {{"arrival", i * g["arrival_every"].get<int64_t>()},
          {"id", fmt::format("roll{:03}", i)},
          {"frames", g["frames"]},
          {"seed", g["seed"].get<int64_t>() + i}};
}

}  // namespace

ProgramKind frame_program() {
  ProgramKind k;
  k.task = "frames";
  k.read_workload = read_frame_workload;
  k.workload_request = frame_workload_request;
  k.make = [](Model& m, const ResolvedDeployment&) -> std::unique_ptr<Program> {
    auto* fm = dynamic_cast<FrameModel*>(&m);
    MSTAR_ASSERT(fm, "a family of task frames builds a frame model");
    return std::make_unique<FrameProgram>(*fm);
  };
  return k;
}

}  // namespace mstar
