#include "engine/tts_runner.h"

#include <chrono>
#include <map>

#include <fmt/format.h>

#include "engine/arrivals.h"
#include "engine/batcher.h"
#include "engine/runner_common.h"
#include "models/sampling.h"
#include "models/tts_model.h"
#include "resources/bounded_kv/manager.h"

namespace mstar {

namespace {

using Clock = std::chrono::steady_clock;
using nlohmann::json;

double ms_since(Clock::time_point t) { return std::chrono::duration<double, std::milli>(Clock::now() - t).count(); }

struct Live {
  TtsRequest req;
  Sampler sampler;
  int source = 0;
  int64_t source_len = 0;
  int64_t written = 0;        // committed entries past the source
  int32_t last = -1;          // the token the next step feeds
  std::vector<int32_t> chunk;  // tokens not yet streamed
  int64_t chunks = 0, generated = 0;
  Clock::time_point arrived;
  const std::string& id() const { return req.id; }
};

struct Voice {
  int source = 0;
  int64_t len = 0;
  std::string error;  // why requests naming it fail
};

}  // namespace

RunStats run_tts(const ResolvedDeployment& d, const Weights& weights, std::vector<RequestItem> items,
                 const RunOptions& options, const EventSink& events) {
  const ModelManifest& m = d.model;
  MSTAR_ASSERT(m.resources.size() == 1 && std::holds_alternative<BoundedKVSpec>(m.resources[0].spec),
               "a tts model declares one bounded_kv resource");
  const BoundedKVSpec& spec = std::get<BoundedKVSpec>(m.resources[0].spec);
  const int64_t R = spec.config.rows_per_request;
  BoundedKVManager kv(spec, BoundedKVOptions{d.deployment.backend, static_cast<int>(d.deployment.threads)});
  const TtsModel model(m, weights, d.deployment.backend);
  const Workload& wl = d.deployment.workload;

  RunStats st;
  st.unit = "tokens";

  // Voices: each prefilled once into a shared source.
  std::map<std::string, Voice> voices;
  int next_source = 1;
  for (const VoiceSpec& v : wl.voices) {
    Voice& voice = voices[v.name];
    const auto len = static_cast<int64_t>(v.tokens.size());
    if (len < std::max<int64_t>(1, spec.config.min_source_len) || len > spec.config.max_source_len) {
      voice.error = fmt::format("voice '{}' has {} prompt tokens; the slots take sources of {} to {}", v.name, len,
                                std::max<int64_t>(1, spec.config.min_source_len), spec.config.max_source_len);
      continue;
    }
    const TtsModel::SourceKV src = model.prefill_source(v.tokens, R);
    const Shape sh{m.arch.common.layers, R, m.arch.common.kv_heads, len, m.arch.common.head_dim};
    voice.source = next_source++;
    voice.len = len;
    kv.register_source(voice.source, f32_view(src.k.data(), sh), f32_view(src.v.data(), sh));
  }

  RunReporter report(st, events);
  auto error = [&](const std::string& id, const std::string& message) { report.error(id, message); };
  auto flush = [&](Live& l) {
    if (l.chunk.empty()) return;
    if (l.chunks == 0) st.first_chunk_ms.push_back(ms_since(l.arrived));
    events({{"event", "chunk"}, {"id", l.req.id}, {"index", l.chunks++}, {"tokens", l.chunk}});
    l.chunk.clear();
  };

  Arrivals arrivals(std::move(items));
  Batcher<Live> batcher;
  BoundedKVStep step;
  StepContext ctx;
  std::vector<std::vector<int32_t>> row_tokens;
  std::vector<float> logits;
  int64_t peak_slots = 0;

  for (int64_t s = 0; !arrivals.empty() || !batcher.waiting.empty() || !batcher.running.empty(); ++s) {
    for (RequestItem& item : arrivals.take(s)) {
      if (report.control(item, batcher, kv, [](const Live& l) { return nlohmann::json{{"tokens", l.generated}}; })) {
        continue;
      }
      if (auto* r = std::get_if<TtsRequest>(&item)) {
        auto v = voices.find(r->voice);
        if (v == voices.end()) {
          error(r->id, fmt::format("request '{}': unknown voice '{}'", r->id, r->voice));
        } else if (!v->second.error.empty()) {
          error(r->id, fmt::format("request '{}': {}", r->id, v->second.error));
        } else {
          kv.ingest_request(r->id);
          Live l{*r, Sampler(r->sampling), v->second.source, v->second.len, 0, -1, {}, 0, 0, Clock::now()};
          batcher.waiting.push_back(std::move(l));
        }
      }
    }
    if (batcher.running.empty() && batcher.waiting.empty()) continue;  // idle until the next arrival

    const auto step_start = Clock::now();
    st.admission_waits += batcher.admit_step(
        R, d.deployment.scheduler.max_batch,
        [&](const std::vector<Live*>& batch) {
          step = {};
          ctx = {};
          for (const Live* l : batch) {
            const int64_t span = l->written == 0 ? static_cast<int64_t>(l->req.prompt.size()) : 1;
            step.segments.push_back({l->id(), l->written == 0 ? "prompt" : "decode", span});
            step.positions[l->id()] = {l->source_len, l->written, l->source};
            ctx.add_rows(l->id(), static_cast<int>(R));
          }
          return kv.admit(step, ctx);
        },
        [&](Live& l, const std::string& reason) {
          kv.remove_request(l.id());
          error(l.id(), reason);
        });
    if (batcher.running.empty()) continue;
    peak_slots = std::max(peak_slots, kv.book().pool().size() - kv.book().pool().free_count());

    const BoundedKVPlan plan = kv.plan(step, ctx);
    row_tokens.clear();
    for (const Live& l : batcher.running)
      for (int64_t r = 0; r < R; ++r) {
        if (l.written > 0) row_tokens.push_back({l.last});
        else if (r == 0) row_tokens.push_back(l.req.prompt);
        else row_tokens.emplace_back(l.req.prompt.size(), 0);  // the unconditional row: pad tokens
      }
    const auto forward_start = Clock::now();
    model.step(kv, step, ctx, plan, row_tokens, logits);
    double forward_ms = ms_since(forward_start);  // the model's work, sampling added below
    kv.commit(step, ctx);

    const int64_t V = model.vocab();
    std::vector<Live> still;
    for (size_t i = 0; i < batcher.running.size(); ++i) {
      Live& l = batcher.running[i];
      std::vector<float> lg(logits.begin() + static_cast<long>(i * static_cast<size_t>(R * V)),
                            logits.begin() + static_cast<long>(i * static_cast<size_t>(R * V) + static_cast<size_t>(V)));
      if (R == 2) {  // classifier-free guidance: uncond + scale * (cond - uncond)
        const float* u = logits.data() + (i * static_cast<size_t>(R) + 1) * static_cast<size_t>(V);
        for (int64_t t = 0; t < V; ++t) lg[static_cast<size_t>(t)] = u[t] + static_cast<float>(wl.guidance_scale) * (lg[static_cast<size_t>(t)] - u[t]);
      }
      l.written += row_tokens[i * static_cast<size_t>(R)].size();
      const auto sample_start = Clock::now();
      l.last = l.sampler.sample(lg);
      forward_ms += ms_since(sample_start);
      l.chunk.push_back(l.last);
      ++l.generated;
      ++st.produced;
      const bool end = l.last == m.arch.tts.end_token, full = l.generated >= l.req.max_tokens;
      if (static_cast<int64_t>(l.chunk.size()) >= wl.chunk_tokens || end || full) flush(l);
      if (end || full) {
        report.done(kv, l.id(), {{"reason", end ? "end_token" : "max_tokens"}, {"tokens", l.generated}});
      } else {
        still.push_back(std::move(l));
      }
    }
    batcher.running = std::move(still);
    report.end_step(step_start, forward_ms, options);
  }
  report.finish({spec.resource_key, "bounded_kv", kv.memory_bytes(), spec.config.max_slots, peak_slots});
  return st;
}

}  // namespace mstar
