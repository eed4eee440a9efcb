#include "engine/bounded_demo.h"

#include <chrono>
#include <deque>
#include <random>

#include <fmt/format.h>

#include "resources/bounded_kv/manager.h"

namespace mstar {

namespace {

struct Live {
  std::string id;
  int source;
  int64_t source_len;
  int64_t written = 0;
  int64_t target;
};

}  // namespace

BoundedDemoReport run_bounded_demo(const BoundedDemoOptions& o, std::FILE* log) {
  BoundedKVConfig c;
  c.num_layers = o.layers;
  c.num_heads = o.kv_heads;
  c.head_dim = o.head_dim;
  c.rows_per_request = 1;
  c.min_source_len = 1;
  c.max_source_len = 96;
  c.retention = SinkWindow{o.sink, o.window, false};
  c.max_slots = o.max_slots;
  c.dtype = o.dtype;
  c.query_window = o.prefill;
  BoundedKVManager kv(BoundedKVSpec{"voice_kv", {}, c}, BoundedKVOptions{o.backend, o.threads});

  std::mt19937_64 gen(o.seed);
  std::normal_distribution<float> normal;
  auto fill = [&](std::vector<float>& v, size_t n) {
    v.resize(n);
    for (auto& x : v) x = normal(gen);
  };
  // Two voices: each a source prefilled once and shared by its requests.
  const int64_t voice_len[2] = {48, 80};
  for (int vi = 0; vi < 2; ++vi) {
    std::vector<float> k, v;
    const Shape sh{c.num_layers, 1, c.num_heads, voice_len[vi], c.head_dim};
    fill(k, static_cast<size_t>(sh.numel()));
    fill(v, static_cast<size_t>(sh.numel()));
    kv.register_source(vi + 1, f32_view(k.data(), sh), f32_view(v.data(), sh));
  }

  std::deque<Live> waiting;
  for (int i = 0; i < o.requests; ++i) {
    const int voice = i % 2;
    waiting.push_back(Live{fmt::format("req{:02}", i), voice + 1, voice_len[voice], 0, o.prefill + o.tokens});
  }
  std::vector<Live> active;
  BoundedDemoReport rep;
  const auto t0 = std::chrono::steady_clock::now();
  std::vector<float> q, k, v, out;
  while (!active.empty() || !waiting.empty()) {
    // Admission, first come first served: the running requests plus as many
    // waiting ones as the pool takes.
    std::vector<Live> joining(waiting.begin(), waiting.end());
    BoundedKVStep step;
    StepContext ctx;
    AdmitOutcome adm;
    for (;;) {
      step = {};
      ctx = {};
      for (const auto* set : {&active, &joining})
        for (const Live& r : *set) {
          step.segments.push_back({r.id, r.written == 0 ? "prefill" : "decode", r.written == 0 ? o.prefill : 1});
          step.positions[r.id] = {r.source_len, r.written, r.source};
          ctx.add_rows(r.id, 1);
        }
      for (const Live& r : joining) kv.ingest_request(r.id);
      adm = kv.admit(step, ctx);
      if (adm.kind != AdmitOutcome::Kind::retry || joining.empty()) break;
      joining.pop_back();  // the newest waits a step longer
    }
    if (!adm.ok()) throw std::runtime_error("bounded demo: step refused: " + adm.reason);
    rep.admission_waits += static_cast<int64_t>(waiting.size() - joining.size());
    for (const Live& r : joining) {
      if (log) std::fprintf(log, "join   %s  voice %d (%lld source entries)\n", r.id.c_str(), r.source,
                            static_cast<long long>(r.source_len));
      active.push_back(r);
      waiting.pop_front();
    }
    rep.peak_slots = std::max<int64_t>(rep.peak_slots, kv.book().pool().size() - kv.book().pool().free_count());

    const BoundedKVPlan plan = kv.plan(step, ctx);
    std::vector<int32_t> q_indptr{0};
    for (const Segment& s : step.segments) q_indptr.push_back(q_indptr.back() + static_cast<int32_t>(s.span));
    const int64_t total = q_indptr.back();
    for (int64_t layer = 0; layer < c.num_layers; ++layer) {
      fill(q, static_cast<size_t>(total * o.q_heads * c.head_dim));
      fill(k, static_cast<size_t>(total * c.num_heads * c.head_dim));
      fill(v, static_cast<size_t>(total * c.num_heads * c.head_dim));
      out.resize(q.size());
      BoundedAttendArgs a;
      a.q = f32_view(q.data(), Shape{total, o.q_heads, c.head_dim});
      a.q_indptr = q_indptr;
      a.k = f32_view(k.data(), Shape{total, c.num_heads, c.head_dim});
      a.v = f32_view(v.data(), Shape{total, c.num_heads, c.head_dim});
      a.out = f32_view(out.data(), Shape{total, o.q_heads, c.head_dim});
      a.mask = kernels::StepMask::causal;
      kv.attend(layer, plan, a);
    }
    kv.commit(step, ctx);
    rep.entries += total;
    if (++rep.steps == 1) rep.memory_first = kv.memory_bytes();

    std::vector<Live> still;
    for (Live& r : active) {
      r.written += r.written == 0 ? o.prefill : 1;
      if (r.written >= r.target) {
        if (log) std::fprintf(log, "done   %s  %lld entries written\n", r.id.c_str(), static_cast<long long>(r.written));
        kv.remove_request(r.id);
      } else {
        still.push_back(r);
      }
    }
    active.swap(still);
  }
  rep.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  rep.memory_last = kv.memory_bytes();
  return rep;
}

}  // namespace mstar
