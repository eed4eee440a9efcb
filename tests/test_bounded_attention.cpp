// Attention through the bounded manager equals dense softmax attention over
// exactly the retained entries of the full stream plus the step's own,
// computed naively from a full history the test keeps (support.h).
//
// Tolerances (max abs difference on outputs of O(1)):
//   reference vs naive: 1e-5 for every dtype (double accumulation in both;
//     stored entries are rounded to the dtype in the oracle too, so the dtype
//     adds no error of its own);
//   cpu vs naive: 1e-4 for every dtype (f32 accumulation, online softmax);
//   batched vs one-by-one: bit for bit on both backends (rows are independent).
#include <doctest/doctest.h>

#include <algorithm>
#include <map>

#include "resources/bounded_kv/manager.h"
#include "kernels/rope.h"
#include "support.h"
#include "backends.h"

using namespace mstar;

namespace {

struct Scenario {
  BoundedKVConfig config;
  int64_t query_heads = 0;
  int requests = 3;
  int steps = 12;
  int max_span = 10;
  std::vector<int64_t> source_lens;  // registered as sources 1, 2, ...
  bool causal = false;
  bool rope_on_read = false;  // rotary positions inside the retained cache
  uint64_t seed = 1;
};

// Full-history oracle of one request.
struct History {
  int source = 0;
  int64_t source_len = 0;
  int64_t written = 0;
  // [layer][row][head] -> entries in stream order, each D floats (as stored)
  std::vector<std::vector<std::vector<std::vector<float>>>> k, v;
};

std::vector<int64_t> retained(int64_t n, const SinkWindow& p, int64_t span) {
  const int64_t W = p.window_includes_step ? p.window - span : p.window;
  std::vector<int64_t> out;
  for (int64_t pos = 0; pos < n; ++pos)
    if (pos < p.sink || (W > 0 && pos >= n - W)) out.push_back(pos);
  return out;
}

struct Harness {
  Scenario sc;
  BoundedKVManager kv;
  test::Rng rng;
  std::map<int, std::vector<float>> src_k, src_v;  // [layers, R, H, len, D] f32 as given
  std::map<std::string, History> hist;

  Harness(const Scenario& s, Backend b)
      : sc(s), kv(BoundedKVSpec{"kv", {}, s.config}, ResourceOptions{b, 2}), rng(s.seed) {
    const auto& c = sc.config;
    for (size_t i = 0; i < sc.source_lens.size(); ++i) {
      const int id = static_cast<int>(i) + 1;
      const int64_t len = sc.source_lens[i];
      const size_t n = static_cast<size_t>(c.num_layers * c.rows_per_request * c.num_heads * len * c.head_dim);
      src_k[id] = rng.normals(n);
      src_v[id] = rng.normals(n);
      kv.register_source(id, len);
      // Each layer's and row's [H, len, D] as the [len, H, D] the resource takes.
      const int64_t H = c.num_heads, D = c.head_dim;
      std::vector<float> kl(static_cast<size_t>(len * H * D)), vl(kl.size());
      for (int64_t l = 0; l < c.num_layers; ++l)
        for (int64_t r = 0; r < c.rows_per_request; ++r) {
          for (int64_t hh = 0; hh < H; ++hh)
            for (int64_t t = 0; t < len; ++t)
              for (int64_t d = 0; d < D; ++d) {
                const auto at = static_cast<size_t>((((l * c.rows_per_request + r) * H + hh) * len + t) * D + d);
                kl[static_cast<size_t>((t * H + hh) * D + d)] = src_k[id][at];
                vl[static_cast<size_t>((t * H + hh) * D + d)] = src_v[id][at];
              }
          kv.write_source(id, l, r, f32_view(kl.data(), Shape{len, H, D}), f32_view(vl.data(), Shape{len, H, D}));
        }
    }
  }

  void start(const std::string& rid, int source) {
    const auto& c = sc.config;
    History h;
    h.source = source;
    h.source_len = source > 0 ? sc.source_lens[static_cast<size_t>(source - 1)] : 0;
    h.k.assign(static_cast<size_t>(c.num_layers),
               std::vector<std::vector<std::vector<float>>>(static_cast<size_t>(c.rows_per_request * c.num_heads)));
    h.v = h.k;
    // The source part of the stream, as stored (rounded to the dtype).
    for (int64_t l = 0; l < c.num_layers; ++l)
      for (int64_t rh = 0; rh < c.rows_per_request * c.num_heads; ++rh)
        for (int64_t t = 0; t < h.source_len; ++t) {
          std::vector<float> kk(static_cast<size_t>(c.head_dim)), vv(static_cast<size_t>(c.head_dim));
          for (int64_t d = 0; d < c.head_dim; ++d) {
            const size_t i = static_cast<size_t>(((l * c.rows_per_request * c.num_heads + rh) * h.source_len + t) *
                                                     c.head_dim +
                                                 d);
            kk[static_cast<size_t>(d)] = round_to(c.dtype, src_k[source][i]);
            vv[static_cast<size_t>(d)] = round_to(c.dtype, src_v[source][i]);
          }
          h.k[static_cast<size_t>(l)][static_cast<size_t>(rh)].push_back(kk);
          h.v[static_cast<size_t>(l)][static_cast<size_t>(rh)].push_back(vv);
        }
    hist[rid] = std::move(h);
    kv.ingest_request(rid);
  }

  struct StepInput {
    std::vector<std::string> rids;
    std::vector<int64_t> spans, q_lens;
    std::vector<int> padding_before;  // padding rows before each request's rows
    int trailing_padding = 0;
  };

  // Runs one step; returns every row's output per layer: [layer][row] -> floats.
  std::vector<std::vector<std::vector<float>>> step(const StepInput& in, std::vector<std::vector<float>>* k_in,
                                                    std::vector<std::vector<float>>* v_in,
                                                    std::vector<std::vector<float>>* q_in, float tol,
                                                    bool commit = true) {
    const auto& c = sc.config;
    const int64_t R = c.rows_per_request, H = c.num_heads, D = c.head_dim, Hq = sc.query_heads;
    Step step;
    StepContext ctx;
    std::vector<int64_t> row_q, row_span;
    std::vector<std::string> row_rid;
    std::vector<int64_t> row_sub;
    for (size_t i = 0; i < in.rids.size(); ++i) {
      const std::string& rid = in.rids[i];
      const History& h = hist.at(rid);
      step.segments.push_back({rid, "step", in.spans[i]});
      step.streams[rid] = {h.source_len, h.written, h.source};
      for (int p = 0; p < in.padding_before[i]; ++p) {
        ctx.add_padding(1);
        row_q.push_back(1), row_span.push_back(0), row_rid.emplace_back(), row_sub.push_back(0);
      }
      for (int64_t r = 0; r < R; ++r) {
        ctx.add_rows(rid, 1);
        row_q.push_back(in.q_lens[i]), row_span.push_back(in.spans[i]), row_rid.push_back(rid), row_sub.push_back(r);
      }
    }
    for (int p = 0; p < in.trailing_padding; ++p) {
      ctx.add_padding(1);
      row_q.push_back(1), row_span.push_back(0), row_rid.emplace_back(), row_sub.push_back(0);
    }
    const AdmitOutcome adm = kv.admit(step, ctx);
    REQUIRE_MESSAGE(adm.ok(), adm.reason);
    kv.plan(step, ctx);
    const BoundedKVPlan& plan = kv.staged();
    const size_t rows = row_q.size();
    std::vector<int32_t> q_indptr(rows + 1, 0);
    for (size_t r = 0; r < rows; ++r) q_indptr[r + 1] = q_indptr[r] + static_cast<int32_t>(row_q[r]);
    const int64_t total_q = q_indptr.back(), total_kv = plan.kv_indptr.back();

    std::vector<std::vector<std::vector<float>>> outs(static_cast<size_t>(c.num_layers));
    for (int64_t l = 0; l < c.num_layers; ++l) {
      // Random inputs, unless the caller hands them in (to replay one step
      // on another manager).
      std::vector<float> q = q_in ? (*q_in)[static_cast<size_t>(l)] : rng.normals(static_cast<size_t>(total_q * Hq * D));
      std::vector<float> k = k_in ? (*k_in)[static_cast<size_t>(l)] : rng.normals(static_cast<size_t>(total_kv * H * D));
      std::vector<float> v = v_in ? (*v_in)[static_cast<size_t>(l)] : rng.normals(static_cast<size_t>(total_kv * H * D));
      std::vector<float> out(static_cast<size_t>(total_q * Hq * D), -7.0f);
      LayerPass a;
      a.q = f32_view(q.data(), Shape{total_q, Hq, D});
      a.q_indptr = q_indptr;
      a.k = f32_view(k.data(), Shape{total_kv, H, D});
      a.v = f32_view(v.data(), Shape{total_kv, H, D});
      a.out = f32_view(out.data(), Shape{total_q, Hq, D});
      a.mask = sc.causal ? kernels::StepMask::causal : kernels::StepMask::full;
      const std::vector<float> inv = rope_inv_freq(static_cast<int32_t>(D), 10000.0);
      if (sc.rope_on_read) a.rope_inv_freq = inv;
      kv.attend(l, a);

      // The oracle, row by row.
      const double scale = 1.0 / std::sqrt(static_cast<double>(D));
      for (size_t r = 0; r < rows; ++r) {
        outs[static_cast<size_t>(l)].emplace_back(out.begin() + q_indptr[r] * Hq * D,
                                                  out.begin() + q_indptr[r + 1] * Hq * D);
        if (row_rid[r].empty()) {  // padding: zeros
          for (int64_t i = q_indptr[r] * Hq * D; i < q_indptr[r + 1] * Hq * D; ++i) CHECK(out[static_cast<size_t>(i)] == 0.0f);
          continue;
        }
        const History& h = hist.at(row_rid[r]);
        const int64_t n = h.source_len + h.written, span = row_span[r];
        const SinkWindow pol = c.retention_for(h.source_len);
        const auto keep = retained(n, pol, span);
        for (int64_t qi = 0; qi < row_q[r]; ++qi)
          for (int64_t hq = 0; hq < Hq; ++hq) {
            const int64_t kh = hq / (Hq / H);
            const auto& hk = h.k[static_cast<size_t>(l)][static_cast<size_t>(row_sub[r] * H + kh)];
            const auto& hv = h.v[static_cast<size_t>(l)][static_cast<size_t>(row_sub[r] * H + kh)];
            std::vector<const float*> keys, vals;
            for (int64_t p : keep) keys.push_back(hk[static_cast<size_t>(p)].data()), vals.push_back(hv[static_cast<size_t>(p)].data());
            const int64_t vis = sc.causal ? span - row_q[r] + qi + 1 : span;
            for (int64_t j = 0; j < vis; ++j) {
              const size_t e = static_cast<size_t>(((plan.kv_indptr[r] + j) * H + kh) * D);
              keys.push_back(&k[e]), vals.push_back(&v[e]);
            }
            std::vector<std::vector<float>> rotated;  // keys at their ordinal in the visible sequence
            if (sc.rope_on_read) {
              for (size_t j = 0; j < keys.size(); ++j) {
                rotated.emplace_back(keys[j], keys[j] + D);
                rotate_half(rotated.back().data(), static_cast<int32_t>(D), static_cast<double>(j), inv.data());
              }
              for (size_t j = 0; j < keys.size(); ++j) keys[j] = rotated[j].data();
            }
            const size_t qo = static_cast<size_t>(((q_indptr[r] + qi) * Hq + hq) * D);
            const auto want = test::naive_attention(&q[qo], keys, vals, D, scale);
            const std::vector<float> got(out.begin() + static_cast<long>(qo), out.begin() + static_cast<long>(qo) + D);
            const float diff = test::max_abs_diff(got, want);
            if (diff > tol) {
              CAPTURE(row_rid[r]);
              CAPTURE(n);
              CAPTURE(span);
              CAPTURE(qi);
              CAPTURE(hq);
              CHECK(diff <= tol);
            }
          }
      }
      // Grow the oracle's histories with the step's entries, in stream order.
      for (size_t r = 0; r < rows && commit; ++r) {
        if (row_rid[r].empty()) continue;
        History& h = hist.at(row_rid[r]);
        for (int64_t kh = 0; kh < H; ++kh)
          for (int64_t j = 0; j < row_span[r]; ++j) {
            const int64_t src = c.reverse_step_order ? row_span[r] - 1 - j : j;
            const size_t e = static_cast<size_t>(((plan.kv_indptr[r] + src) * H + kh) * D);
            std::vector<float> kk(static_cast<size_t>(D)), vv(static_cast<size_t>(D));
            for (int64_t d = 0; d < D; ++d)
              kk[static_cast<size_t>(d)] = round_to(c.dtype, k[e + static_cast<size_t>(d)]),
              vv[static_cast<size_t>(d)] = round_to(c.dtype, v[e + static_cast<size_t>(d)]);
            h.k[static_cast<size_t>(l)][static_cast<size_t>(row_sub[r] * H + kh)].push_back(std::move(kk));
            h.v[static_cast<size_t>(l)][static_cast<size_t>(row_sub[r] * H + kh)].push_back(std::move(vv));
          }
      }
      if (k_in == nullptr && v_in == nullptr && q_in == nullptr) {  // kept to replay the step elsewhere
        last_q.resize(static_cast<size_t>(c.num_layers)), last_k.resize(static_cast<size_t>(c.num_layers)),
            last_v.resize(static_cast<size_t>(c.num_layers));
        last_q[static_cast<size_t>(l)] = q, last_k[static_cast<size_t>(l)] = k, last_v[static_cast<size_t>(l)] = v;
      }
    }
    if (!commit) return outs;  // a pass that is not committed leaves every stream where it was
    kv.commit(step, ctx);
    for (size_t i = 0; i < in.rids.size(); ++i) hist.at(in.rids[i]).written += in.spans[i];
    return outs;
  }

  std::vector<std::vector<float>> last_q, last_k, last_v;
};

float tolerance(Backend b) { return b == Backend::reference ? 1e-5f : 1e-4f; }

// Random multi-step streams: several requests, each on a random source (or
// none), random spans from 0 to several windows, random padding rows.
void run_random(const Scenario& sc, Backend backend) {
  Harness h(sc, backend);
  test::Rng pick(sc.seed * 31 + 5);
  std::vector<std::string> rids;
  for (int i = 0; i < sc.requests; ++i) {
    rids.push_back(fmt::format("r{}", i));
    // Source 0 is none: only where the config allows a stream without a source.
    const int64_t first = sc.config.min_source_len > 0 ? 1 : 0;
    h.start(rids.back(), static_cast<int>(pick.uniform(first, static_cast<int64_t>(sc.source_lens.size()))));
  }
  for (int s = 0; s < sc.steps; ++s) {
    Harness::StepInput in;
    for (const auto& rid : rids) {
      if (!pick.coin(0.8)) continue;
      in.rids.push_back(rid);
      int64_t span = pick.uniform(0, sc.max_span);
      if (sc.config.query_window) span = std::min(span, *sc.config.query_window);
      if (sc.causal && span == 0) span = 1;
      in.spans.push_back(span);
      in.q_lens.push_back(sc.causal ? pick.uniform(1, span) : pick.uniform(1, 3));
      in.padding_before.push_back(pick.coin(0.2) ? 1 : 0);
    }
    in.trailing_padding = pick.coin(0.3) ? 2 : 0;
    h.step(in, nullptr, nullptr, nullptr, tolerance(backend));
  }
}

BoundedKVConfig base(int64_t D, int64_t H, SinkWindow pol, DType dt) {
  BoundedKVConfig c;
  c.num_layers = 2;
  c.num_heads = H;
  c.head_dim = D;
  c.rows_per_request = 1;
  c.max_source_len = 40;
  c.retention = pol;
  c.max_slots = 8;
  c.dtype = dt;
  return c;
}

}  // namespace

TEST_CASE("attention equivalence: random streams, both backends, every dtype") {
  for (Backend b : test::host_backends())
    for (DType dt : {DType::f32, DType::f16, DType::bf16}) {
      CAPTURE(to_string(b));
      CAPTURE(to_string(dt));
      Scenario sc;
      sc.config = base(16, 2, SinkWindow{4, 9, false}, dt);
      sc.query_heads = 4;
      sc.source_lens = {3, 11};
      sc.max_span = 25;  // up to several windows
      sc.seed = 100 + static_cast<uint64_t>(dt);
      run_random(sc, b);
    }
}

TEST_CASE("attention equivalence: policies, causal steps, two rows per request, rules of the source") {
  for (Backend b : test::host_backends()) {
    CAPTURE(to_string(b));
    Scenario sc;
    sc.config = base(8, 2, SinkWindow{2, 6, true}, DType::f32);
    sc.config.rows_per_request = 2;  // classifier-free guidance
    sc.query_heads = 2;
    sc.source_lens = {1, 5, 17};
    sc.causal = true;
    sc.max_span = 14;
    sc.seed = 7;
    run_random(sc, b);

    sc.config = base(8, 1, SinkWindow{}, DType::bf16);
    sc.config.retention = RetentionRule{SourceAffine{1, 3}, SourceAffine{0, 7}, false};  // whole source plus 3
    sc.config.reverse_step_order = true;
    sc.causal = false;
    sc.query_heads = 3;
    sc.seed = 8;
    run_random(sc, b);

    sc.config = base(8, 1, SinkWindow{0, 0, false}, DType::f16);  // window 0: only the sink
    sc.config.retention = SinkWindow{5, 0, false};
    sc.seed = 9;
    run_random(sc, b);
  }
}

TEST_CASE("rotary positions inside the cache: keys rotated on read by their ordinal, both backends") {
  for (Backend b : test::host_backends())
    for (bool causal : {false, true}) {
      CAPTURE(to_string(b));
      Scenario sc;
      sc.config = base(16, 2, SinkWindow{3, 7, false}, DType::bf16);
      sc.query_heads = 4;
      sc.source_lens = {5};
      sc.causal = causal;
      sc.rope_on_read = true;
      sc.max_span = 12;
      sc.seed = causal ? 21 : 22;
      run_random(sc, b);
    }
}

TEST_CASE("cpu against reference on odd sizes (17, 54, 97)") {
  for (int64_t D : {17, 54, 97}) {
    for (DType dt : {DType::f32, DType::bf16}) {
      CAPTURE(D);
      Scenario sc;
      sc.config = base(D, 3, SinkWindow{5, D, false}, dt);  // window as odd as the head
      sc.config.max_source_len = 120;
      sc.query_heads = 6;
      sc.source_lens = {D};
      sc.requests = 2;
      sc.steps = 4;
      sc.max_span = static_cast<int>(D) + 20;
      sc.seed = static_cast<uint64_t>(D);
      Harness ref(sc, Backend::reference), cpu(sc, Backend::cpu);
      for (auto* h : {&ref, &cpu}) h->start("a", 1), h->start("b", 0);
      test::Rng pick(static_cast<uint64_t>(D) + 1);
      for (int s = 0; s < sc.steps; ++s) {
        Harness::StepInput in{{"a", "b"}, {pick.uniform(0, sc.max_span), pick.uniform(1, sc.max_span)}, {1, 2}, {0, 1}, 1};
        const auto want = ref.step(in, nullptr, nullptr, nullptr, 1e-5f);
        const auto got = cpu.step(in, &ref.last_k, &ref.last_v, &ref.last_q, 1e-4f);
        for (size_t l = 0; l < want.size(); ++l)
          for (size_t r = 0; r < want[l].size(); ++r) CHECK(test::max_abs_diff(got[l][r], want[l][r]) <= 1e-4f);
      }
    }
  }
}

TEST_CASE("batched equals one by one, bit for bit, on both backends") {
  for (Backend b : test::host_backends()) {
    CAPTURE(to_string(b));
    Scenario sc;
    sc.config = base(12, 2, SinkWindow{3, 10, false}, DType::f16);
    sc.query_heads = 4;
    sc.source_lens = {6};
    Harness batched(sc, b), single(sc, b);
    for (auto* h : {&batched, &single}) h->start("a", 1), h->start("b", 0), h->start("c", 1);
    test::Rng pick(99);
    for (int s = 0; s < 8; ++s) {
      Harness::StepInput all{{"a", "b", "c"}, {}, {}, {0, 1, 0}, 1};
      for (int i = 0; i < 3; ++i) all.spans.push_back(pick.uniform(0, 24)), all.q_lens.push_back(pick.uniform(1, 3));
      const auto together = batched.step(all, nullptr, nullptr, nullptr, tolerance(b));
      // Replay each request alone with the same numbers.
      const int64_t H = 2, Hq = 4, D = 12;
      int64_t kv_off = 0, q_off = 0;
      size_t row = 0;
      for (int i = 0; i < 3; ++i) {
        row += static_cast<size_t>(all.padding_before[static_cast<size_t>(i)]);
        q_off += all.padding_before[static_cast<size_t>(i)];
        Harness::StepInput one{{all.rids[static_cast<size_t>(i)]}, {all.spans[static_cast<size_t>(i)]},
                               {all.q_lens[static_cast<size_t>(i)]}, {0}, 0};
        std::vector<std::vector<float>> q(2), k(2), v(2);
        for (size_t l = 0; l < 2; ++l) {
          const auto& bq = batched.last_q[l];
          const auto& bk = batched.last_k[l];
          const auto& bv = batched.last_v[l];
          q[l].assign(bq.begin() + q_off * Hq * D, bq.begin() + (q_off + one.q_lens[0]) * Hq * D);
          k[l].assign(bk.begin() + kv_off * H * D, bk.begin() + (kv_off + one.spans[0]) * H * D);
          v[l].assign(bv.begin() + kv_off * H * D, bv.begin() + (kv_off + one.spans[0]) * H * D);
        }
        const auto alone = single.step(one, &k, &v, &q, tolerance(b));
        for (size_t l = 0; l < 2; ++l) CHECK(alone[l][0] == together[l][row]);
        kv_off += one.spans[0];
        q_off += one.q_lens[0];
        ++row;
      }
    }
  }
}

TEST_CASE("a step that is not committed leaves every retained entry intact: N passes then a commit equal one") {
  // kv-semantics.md: a denoising pass over a chunk (or a retried forward)
  // must not overwrite window entries the next step still reads. Two
  // managers see the same streams; one runs each step three times
  // uncommitted before committing it. Every pass reads the same window, so
  // every output (and every later step) is bit-identical.
  for (Backend b : test::host_backends()) {
    CAPTURE(to_string(b));
    Scenario sc;
    sc.config = base(8, 2, SinkWindow{2, 5, false}, DType::bf16);
    sc.query_heads = 2;
    sc.source_lens = {4};
    Harness once(sc, b), passes(sc, b);
    for (auto* h : {&once, &passes}) h->start("a", 1), h->start("b", 0);
    test::Rng pick(5);
    for (int s = 0; s < 10; ++s) {
      // Spans up to twice the window, so a step's writes would reach entries it reads.
      Harness::StepInput in{{"a", "b"}, {pick.uniform(1, 10), pick.uniform(1, 10)}, {2, 1}, {0, 1}, 0};
      const auto want = once.step(in, nullptr, nullptr, nullptr, tolerance(b));
      for (int p = 0; p < 3; ++p) {
        const auto got = passes.step(in, &once.last_k, &once.last_v, &once.last_q, tolerance(b), false);
        CHECK(got == want);
      }
      CHECK(passes.step(in, &once.last_k, &once.last_v, &once.last_q, tolerance(b)) == want);
    }
  }
}

TEST_CASE("a retention whose slot holds nothing attends to the source part and the step's own entries") {
  // Window 0 with the sink inside the source: slot_tokens is 0, no slot has
  // an address, and every step still runs (kv-semantics.md).
  for (Backend b : test::host_backends()) {
    CAPTURE(to_string(b));
    Scenario sc;
    sc.config = base(8, 2, SinkWindow{3, 0, false}, DType::f32);
    sc.config.min_source_len = 3;
    sc.query_heads = 4;
    sc.source_lens = {3, 9};
    sc.max_span = 6;
    REQUIRE(sc.config.slot_tokens() == 0);
    sc.seed = 31;
    run_random(sc, b);
    sc.config.retention = RetentionRule{SourceAffine{1, 0}, SourceAffine{0, 0}, false};  // the whole source, window 0
    sc.config.min_source_len = 0;
    REQUIRE(sc.config.slot_tokens() == 0);
    sc.seed = 32;
    run_random(sc, b);
  }
}
