#include "engine/world_runner.h"

#include <chrono>
#include <cmath>
#include <fstream>
#include <random>

#include <fmt/format.h>

#include "engine/arrivals.h"
#include "engine/batcher.h"
#include "engine/runner_common.h"
#include "models/world_model.h"
#include "resources/ring_kv/manager.h"

namespace mstar {

namespace {

using Clock = std::chrono::steady_clock;
using nlohmann::json;

double ms_since(Clock::time_point t) { return std::chrono::duration<double, std::milli>(Clock::now() - t).count(); }

struct Live {
  WorldRequest req;
  int64_t frame = 0;  // the next frame to make
  Clock::time_point arrived;
  const std::string& id() const { return req.id; }
};

// Seeded Gaussian noise for one frame of one rollout.
void frame_noise(uint64_t seed, int64_t frame, std::vector<float>& out) {
  std::mt19937_64 gen(seed * 0x9E3779B97F4A7C15ull + static_cast<uint64_t>(frame));
  std::normal_distribution<float> n;
  for (auto& x : out) x = n(gen);
}

std::string checksum(const float* x, size_t n) {
  uint64_t h = 0xcbf29ce484222325ull;
  const auto* b = reinterpret_cast<const unsigned char*>(x);
  for (size_t i = 0; i < n * sizeof(float); ++i) h = (h ^ b[i]) * 0x100000001b3ull;
  return fmt::format("{:016x}", h);
}

}  // namespace

RunStats run_world(const ResolvedDeployment& d, const Weights& weights, std::vector<RequestItem> items,
                   const RunOptions& options, const EventSink& events) {
  const ModelManifest& m = d.model;
  MSTAR_ASSERT(m.resources.size() == 1 && std::holds_alternative<RingKVSpec>(m.resources[0].spec),
               "a world model declares one ring_kv resource");
  const RingKVSpec& spec = std::get<RingKVSpec>(m.resources[0].spec);
  RingKVManager kv(spec, RingKVOptions{d.deployment.backend, static_cast<int>(d.deployment.threads)});
  const WorldModel model(m, weights, d.deployment.backend);
  const int64_t T = model.tokens_per_frame(), C = model.channels(), cd = m.arch.world.control_dim;
  if (!options.frames_dir.empty()) std::filesystem::create_directories(options.frames_dir);

  RunStats st;
  st.unit = "frames";
  RunReporter report(st, events);
  auto error = [&](const std::string& id, const std::string& message) { report.error(id, message); };

  Arrivals arrivals(std::move(items));
  Batcher<Live> batcher;
  RingKVStep step;
  StepContext ctx;
  int64_t peak = 0;
  for (int64_t s = 0; !arrivals.empty() || !batcher.waiting.empty() || !batcher.running.empty(); ++s) {
    for (RequestItem& item : arrivals.take(s)) {
      if (report.control(item, batcher, kv, [](const Live& l) { return nlohmann::json{{"frames", l.frame}}; })) {
        continue;
      }
      if (auto* r = std::get_if<WorldRequest>(&item)) {
        kv.ingest_request(r->id);
        batcher.waiting.push_back(Live{*r, 0, Clock::now()});
      } else {
        error("?", "a tts request sent to a world model");
      }
    }
    if (batcher.running.empty() && batcher.waiting.empty()) continue;

    const auto step_start = Clock::now();
    st.admission_waits += batcher.admit_step(
        1, d.deployment.scheduler.max_batch,
        [&](const std::vector<Live*>& batch) {
          step = {};
          ctx = {};
          for (const Live* l : batch) {
            step.segments.push_back({l->id(), "frame", T});
            step.frames[l->id()] = l->frame;
            ctx.add_rows(l->id(), 1);
          }
          return kv.admit(step, ctx);
        },
        [&](Live& l, const std::string& reason) {
          kv.remove_request(l.id());
          error(l.id(), reason);
        });
    if (batcher.running.empty()) continue;
    const RingPlan plan = kv.plan(step, ctx);
    peak = std::max(peak, kv.num_sessions() - kv.book().free_sessions());

    const auto B = static_cast<int64_t>(batcher.running.size());
    std::vector<int64_t> frame_pos;
    std::vector<float> noise(static_cast<size_t>(B * T * C)), controls(static_cast<size_t>(B * cd)), one(static_cast<size_t>(T * C));
    for (int64_t b = 0; b < B; ++b) {
      const Live& l = batcher.running[static_cast<size_t>(b)];
      frame_pos.push_back(l.frame);
      frame_noise(l.req.seed, l.frame, one);
      std::copy(one.begin(), one.end(), noise.begin() + b * T * C);
      if (cd == 0) continue;
      if (!l.req.controls.empty()) {
        const auto& c = l.req.controls[static_cast<size_t>(l.frame) % l.req.controls.size()];
        std::copy(c.begin(), c.end(), controls.begin() + b * cd);
      } else {
        std::vector<float> c(static_cast<size_t>(cd));
        frame_noise(l.req.seed ^ 0xC0117801ull, l.frame, c);  // a seeded control stream
        std::copy(c.begin(), c.end(), controls.begin() + b * cd);
      }
    }
    const auto forward_start = Clock::now();
    const std::vector<float> frames =
        model.generate(B, frame_pos, noise, controls.data(), model.ring_attention(kv, plan, frame_pos));
    const double forward_ms = ms_since(forward_start);
    kv.commit(step, ctx);

    std::vector<Live> still;
    for (int64_t b = 0; b < B; ++b) {
      Live& l = batcher.running[static_cast<size_t>(b)];
      const float* x = frames.data() + b * T * C;
      double sum = 0, sq = 0, mn = INFINITY, mx = -INFINITY;
      for (int64_t i = 0; i < T * C; ++i) {
        sum += x[i], sq += static_cast<double>(x[i]) * x[i];
        mn = std::min<double>(mn, x[i]), mx = std::max<double>(mx, x[i]);
      }
      const double mean = sum / static_cast<double>(T * C);
      if (l.frame == 0) st.first_chunk_ms.push_back(ms_since(l.arrived));
      events({{"event", "frame"}, {"id", l.id()}, {"frame", l.frame}, {"shape", {T, C}},
              {"checksum", checksum(x, static_cast<size_t>(T * C))}, {"mean", mean},
              {"std", std::sqrt(std::max(0.0, sq / static_cast<double>(T * C) - mean * mean))}, {"min", mn}, {"max", mx}});
      if (!options.frames_dir.empty()) {
        std::ofstream out(options.frames_dir / fmt::format("{}-{:06}.f32", l.id(), l.frame), std::ios::binary);
        out.write(reinterpret_cast<const char*>(x), static_cast<std::streamsize>(T * C * sizeof(float)));
      }
      ++st.produced;
      if (++l.frame >= l.req.frames) {
        report.done(kv, l.id(), {{"reason", "frames"}, {"frames", l.frame}});
      } else {
        still.push_back(std::move(l));
      }
    }
    batcher.running = std::move(still);
    report.end_step(step_start, forward_ms, options);
  }
  report.finish({spec.resource_key, "ring_kv", kv.memory_bytes(), spec.config.num_sessions, peak});
  return st;
}

}  // namespace mstar
