// The ring KV resource against an explicit model kept by the test: per
// session and layer, the list of committed frames; what a frame may see is
// worked out from the definition (dilation and buckets), not from slots.
#include <doctest/doctest.h>

#include <algorithm>
#include <cstring>
#include <map>

#include "core/format_value.h"
#include "resources/ring_kv/json.h"
#include "core/errors.h"
#include "resources/ring_kv/manager.h"
#include "resources/ring_kv/memory.h"
#include "support.h"
#include "backends.h"

using namespace mstar;

namespace {

RingKVConfig small_config() {
  RingKVConfig c;
  c.num_layers = 2;
  c.num_kv_heads = 2;
  c.head_dim = 4;
  c.tokens_per_frame = 3;
  c.layers = {RingGeometry{4, 4, 1}, RingGeometry{8, 3, 2}};
  c.num_sessions = 2;
  c.dtype = DType::f32;
  return c;
}

std::string error_of(const RingKVConfig& c) {
  try {
    c.validate("world.kv");
  } catch (const ConfigError& e) {
    return e.what();
  }
  return "";
}

// Frames a frame f sees in a layer of this geometry, from the definition:
// committed frames g on the write clock (g % d == 0) whose bucket is among
// the last ring_buckets before f's, minus the one f is about to overwrite.
std::vector<int64_t> retained_frames(const std::vector<int64_t>& committed, const RingGeometry& g, int64_t f) {
  const int64_t d = g.pinned_dilation;
  const int64_t bucket = (f + d - 1) / d;
  const bool write_step = f % d == 0;
  std::vector<int64_t> out;
  for (int64_t c : committed)
    if (c < f && c % d == 0 && c / d >= bucket - g.ring_buckets + (write_step ? 1 : 0)) out.push_back(c);
  return out;
}

struct Model {
  // [rid][layer]: committed frame -> K, V as stored ([H][T][D] each)
  std::map<std::string, std::vector<std::map<int64_t, std::pair<std::vector<float>, std::vector<float>>>>> frames;
};

struct Row {
  std::string rid;  // "" = padding
  int64_t frame;
};

// Every session no request holds is as a reset leaves it: only its scratch
// counts as written, in every layer.
void check_free_sessions_clear(const RingKVManager& kv) {
  std::vector<uint8_t> held(static_cast<size_t>(kv.num_sessions()), 0);
  for (int32_t s = 0; s < static_cast<int32_t>(kv.num_sessions()); ++s) held[static_cast<size_t>(s)] = kv.book().pool().held(s);
  for (int32_t s = 0; s < static_cast<int32_t>(kv.num_sessions()); ++s) {
    if (held[static_cast<size_t>(s)]) continue;
    for (int64_t l = 0; l < kv.config().num_layers; ++l) {
      std::vector<uint8_t> want(static_cast<size_t>(kv.config().layers[static_cast<size_t>(l)].ring_frames + 1), 0);
      want.back() = 1;
      CHECK(kv.book().written(l, s) == want);
    }
  }
}

struct Harness {
  RingKVConfig c;
  RingKVManager kv;
  Model model;
  test::Rng rng;
  int64_t Hq;
  float tol;

  Harness(const RingKVConfig& cfg, Backend b, uint64_t seed, int64_t q_heads)
      : c(cfg), kv(RingKVSpec{"world_kv", {}, cfg}, ResourceOptions{b, 2}), rng(seed), Hq(q_heads),
        tol(b == Backend::reference ? 1e-5f : 1e-4f) {}

  void start(const std::string& rid) {
    kv.ingest_request(rid);
    model.frames[rid].assign(static_cast<size_t>(c.num_layers), {});
  }

  // One engine step: `passes` denoising passes, the last one committing
  // (unless commit_last is off: a step that commits nothing). Returns per
  // pass, per layer, the rows' outputs. Inputs may be given
  // (inputs[pass][layer] = {q, k, v}) to replay a step exactly.
  using Inputs = std::vector<std::vector<std::array<std::vector<float>, 3>>>;
  std::vector<std::vector<std::vector<float>>> step(const std::vector<Row>& rows, int passes, Inputs* inputs,
                                                    bool check = true, bool commit_last = true) {
    const int64_t H = c.num_kv_heads, T = c.tokens_per_frame, D = c.head_dim;
    Step st;
    StepContext ctx;
    for (const Row& r : rows) {
      if (r.rid.empty()) {
        ctx.add_padding(1);
        continue;
      }
      st.segments.push_back({r.rid, "frame", T});
      st.frames[r.rid] = r.frame;
      ctx.add_rows(r.rid, 1);
    }
    const AdmitOutcome adm = kv.admit(st, ctx);
    REQUIRE_MESSAGE(adm.ok(), adm.reason);
    kv.plan(st, ctx);
    const auto B = static_cast<int64_t>(rows.size());
    const bool given = inputs && !inputs->empty();
    if (inputs && !given) inputs->assign(static_cast<size_t>(passes), std::vector<std::array<std::vector<float>, 3>>(static_cast<size_t>(c.num_layers)));
    std::vector<std::vector<std::vector<float>>> outs(static_cast<size_t>(passes));
    for (int pass = 0; pass < passes; ++pass) {
      const bool commit = commit_last && pass == passes - 1;
      for (int64_t l = 0; l < c.num_layers; ++l) {
        std::vector<float> q, k, v;
        if (given) {
          auto& in = (*inputs)[static_cast<size_t>(pass)][static_cast<size_t>(l)];
          q = in[0], k = in[1], v = in[2];
        } else {
          q = rng.normals(static_cast<size_t>(B * T * Hq * D));
          k = rng.normals(static_cast<size_t>(B * H * T * D));
          v = rng.normals(static_cast<size_t>(B * H * T * D));
          if (inputs) (*inputs)[static_cast<size_t>(pass)][static_cast<size_t>(l)] = {q, k, v};
        }
        // The test keeps each row's frame as [H, T, D]; the model hands the
        // resource [rows * T, H, D].
        std::vector<float> kt(k.size()), vt(v.size());
        for (int64_t b = 0; b < B; ++b)
          for (int64_t h = 0; h < H; ++h)
            for (int64_t t = 0; t < T; ++t)
              for (int64_t d = 0; d < D; ++d) {
                kt[static_cast<size_t>(((b * T + t) * H + h) * D + d)] = k[static_cast<size_t>(((b * H + h) * T + t) * D + d)];
                vt[static_cast<size_t>(((b * T + t) * H + h) * D + d)] = v[static_cast<size_t>(((b * H + h) * T + t) * D + d)];
              }
        kv.upsert(l, f32_view(kt.data(), Shape{B * T, H, D}), f32_view(vt.data(), Shape{B * T, H, D}), commit);
        std::vector<float> out(q.size());
        kv.attend(l, f32_view(q.data(), Shape{B * T, Hq, D}), f32_view(out.data(), Shape{B * T, Hq, D}));
        outs[static_cast<size_t>(pass)].push_back(out);
        if (check) check_rows(rows, l, q, k, v, out);
        if (commit)
          for (int64_t b = 0; b < B; ++b) {
            const Row& r = rows[static_cast<size_t>(b)];
            if (r.rid.empty()) continue;
            std::vector<float> kk(static_cast<size_t>(H * T * D)), vv(kk.size());
            for (size_t i = 0; i < kk.size(); ++i)
              kk[i] = round_to(c.dtype, k[static_cast<size_t>(b * H * T * D) + i]),
              vv[i] = round_to(c.dtype, v[static_cast<size_t>(b * H * T * D) + i]);
            model.frames[r.rid][static_cast<size_t>(l)][r.frame] = {kk, vv};
          }
      }
    }
    kv.commit(st, ctx);
    return outs;
  }

  void check_rows(const std::vector<Row>& rows, int64_t l, const std::vector<float>& q, const std::vector<float>& k,
                  const std::vector<float>& v, const std::vector<float>& out) {
    const int64_t H = c.num_kv_heads, T = c.tokens_per_frame, D = c.head_dim, group = Hq / H;
    const RingGeometry& geo = c.layers[static_cast<size_t>(l)];
    for (size_t b = 0; b < rows.size(); ++b) {
      const Row& r = rows[b];
      if (r.rid.empty()) continue;
      const auto& committed_map = model.frames[r.rid][static_cast<size_t>(l)];
      std::vector<int64_t> committed;
      for (const auto& [f, kv_] : committed_map) committed.push_back(f);
      const auto keep = retained_frames(committed, geo, r.frame);
      // The current frame as stored in the scratch (rounded to the dtype).
      std::vector<float> cur_k(static_cast<size_t>(H * T * D)), cur_v(cur_k.size());
      for (size_t i = 0; i < cur_k.size(); ++i)
        cur_k[i] = round_to(c.dtype, k[b * static_cast<size_t>(H * T * D) + i]),
        cur_v[i] = round_to(c.dtype, v[b * static_cast<size_t>(H * T * D) + i]);
      for (int64_t t = 0; t < T; ++t)
        for (int64_t hq = 0; hq < Hq; ++hq) {
          const int64_t h = hq / group;
          std::vector<const float*> keys, vals;
          for (int64_t f : keep) {
            const auto& e = committed_map.at(f);
            for (int64_t tt = 0; tt < T; ++tt)
              keys.push_back(&e.first[static_cast<size_t>((h * T + tt) * D)]),
                  vals.push_back(&e.second[static_cast<size_t>((h * T + tt) * D)]);
          }
          for (int64_t tt = 0; tt < T; ++tt)
            keys.push_back(&cur_k[static_cast<size_t>((h * T + tt) * D)]),
                vals.push_back(&cur_v[static_cast<size_t>((h * T + tt) * D)]);
          const size_t qo = static_cast<size_t>(((static_cast<int64_t>(b) * T + t) * Hq + hq) * D);
          const auto want = test::naive_attention(&q[qo], keys, vals, D, 1.0 / std::sqrt(static_cast<double>(D)));
          const std::vector<float> got(out.begin() + static_cast<long>(qo), out.begin() + static_cast<long>(qo) + D);
          const float diff = test::max_abs_diff(got, want);
          if (diff > tol) {
            CAPTURE(r.rid);
            CAPTURE(r.frame);
            CAPTURE(l);
            CAPTURE(keep.size());
            CHECK(diff <= tol);
          }
        }
    }
  }
};

RingKVConfig random_config(test::Rng& rng, DType dt) {
  RingKVConfig c;
  c.num_layers = rng.uniform(1, 3);
  c.num_kv_heads = rng.uniform(1, 2);
  c.head_dim = rng.uniform(3, 9);
  c.tokens_per_frame = rng.uniform(1, 3);
  c.num_sessions = rng.uniform(2, 4);
  c.dtype = dt;
  for (int64_t l = 0; l < c.num_layers; ++l) {
    RingGeometry g;
    g.ring_frames = rng.uniform(1, 9);
    g.ring_buckets = rng.uniform(1, g.ring_frames);
    g.pinned_dilation = rng.coin() ? 1 : rng.uniform(2, 4);
    c.layers.push_back(g);
  }
  return c;
}

}  // namespace

TEST_CASE("ring config: sizes and validation messages") {
  RingKVConfig c = small_config();
  c.validate();
  CHECK(c.total_sessions() == 3);
  CHECK(c.capacity(0) == 5 * 3);
  CHECK(c.capacity(1) == 9 * 3);
  CHECK(c.total_slots(1) == 3 * 27);
  c.num_sessions = 0;
  CHECK(error_of(c) == "world.kv: num_sessions must be in [1, 2147483646], got 0");
  c = small_config();
  c.layers.pop_back();
  CHECK(error_of(c) == "world.kv: layers has 1 geometries but num_layers is 2");
  c = small_config();
  c.layers[1].ring_buckets = 9;
  CHECK(error_of(c) == "world.kv: layers[1].ring_buckets must be in [1, ring_frames = 8], got 9");
  c = small_config();
  c.layers[0].pinned_dilation = 0;
  CHECK(error_of(c) == "world.kv: layers[0].pinned_dilation must be in [1, 1073741824], got 0");
  c = small_config();
  c.tokens_per_frame = -1;
  CHECK(error_of(c) == "world.kv: tokens_per_frame must be at least 1, got -1");

  const auto j = to_json(small_config());
  CHECK(ring_kv_config_from_json(j, "cfg") == small_config());
  auto broken = j;
  broken["layers"][1].erase("ring_buckets");
  CHECK_THROWS_WITH_AS(ring_kv_config_from_json(broken, "cfg"), "cfg.layers[1].ring_buckets: missing required key",
                       ConfigError);
  CHECK(format_fields(small_config()) ==
        "num_layers: 2, num_kv_heads: 2, head_dim: 4, tokens_per_frame: 3, layers: [{ring_frames: 4, ring_buckets: 4, "
        "pinned_dilation: 1}, {ring_frames: 8, ring_buckets: 3, pinned_dilation: 2}], num_sessions: 2, dtype: f32");
}

TEST_CASE("ring attention equals naive attention over the retained frames, both backends") {
  for (Backend b : test::host_backends())
    for (DType dt : {DType::f32, DType::bf16}) {
      test::Rng rng(dt == DType::f32 ? 17 : 18);
      for (int trial = 0; trial < 6; ++trial) {
        const RingKVConfig c = random_config(rng, dt);
        CAPTURE(to_string(b));
        CAPTURE(fmt::format("{}", c));
        Harness h(c, b, rng.uniform(0, 1 << 30), c.num_kv_heads * rng.uniform(1, 2));
        const int64_t sessions = c.num_sessions;
        std::vector<std::string> rids;
        std::vector<int64_t> next;
        for (int64_t s = 0; s < sessions; ++s) {
          rids.push_back(fmt::format("s{}", s));
          h.start(rids.back());
          next.push_back(rng.coin(0.3) ? rng.uniform(1, 5) : 0);  // some rollouts start past frame 0
        }
        int64_t horizon = 1;
        for (const auto& g : c.layers) horizon = std::max(horizon, g.ring_buckets * g.pinned_dilation);
        for (int step = 0; step < 3 * horizon + 6; ++step) {  // several ring lengths
          std::vector<Row> rows;
          for (int64_t s = 0; s < sessions; ++s)
            if (rng.coin(0.7)) rows.push_back({rids[static_cast<size_t>(s)], next[static_cast<size_t>(s)]++});
          if (rng.coin(0.3)) rows.push_back({"", rng.uniform(0, 20)});
          std::shuffle(rows.begin(), rows.end(), rng.gen);  // interleaved order
          if (rows.empty()) continue;
          h.step(rows, static_cast<int>(rng.uniform(1, 3)), nullptr);
        }
        check_free_sessions_clear(h.kv);
      }
    }
}

TEST_CASE("isolation: a session's outputs do not change with neighbours or padding") {
  for (Backend b : test::host_backends()) {
    const RingKVConfig c = [] {
      RingKVConfig x = small_config();
      x.num_sessions = 3;
      return x;
    }();
    Harness alone(c, b, 1, 4), crowded(c, b, 2, 4);
    alone.start("a");
    for (const char* r : {"x", "a", "y"}) crowded.start(r);
    for (int64_t f = 0; f < 12; ++f) {
      Harness::Inputs in;
      const auto a_out = alone.step({{"a", f}}, 2, &in);
      // The same numbers for "a" at row 1, others around it.
      const int64_t H = 2, T = 3, D = 4, Hq = 4;
      Harness::Inputs in3(in.size(), std::vector<std::array<std::vector<float>, 3>>(2));
      test::Rng noise(static_cast<uint64_t>(f) + 100);
      for (size_t p = 0; p < in.size(); ++p)
        for (size_t l = 0; l < 2; ++l) {
          auto wrap = [&](const std::vector<float>& mine, size_t per_row) {
            std::vector<float> all = noise.normals(per_row);
            all.insert(all.end(), mine.begin(), mine.end());
            auto tail = noise.normals(2 * per_row);
            all.insert(all.end(), tail.begin(), tail.end());
            return all;
          };
          in3[p][l] = {wrap(in[p][l][0], T * Hq * D), wrap(in[p][l][1], H * T * D), wrap(in[p][l][2], H * T * D)};
        }
      const auto c_out = crowded.step({{"x", f}, {"a", f}, {"y", f + 3}, {"", 0}}, 2, &in3);
      for (size_t p = 0; p < a_out.size(); ++p)
        for (size_t l = 0; l < 2; ++l) {
          const auto& got = c_out[p][l];
          const std::vector<float> row1(got.begin() + T * Hq * D, got.begin() + 2 * T * Hq * D);
          CHECK(row1 == a_out[p][l]);
        }
    }
  }
}

TEST_CASE("ring admission: full pool, unknown request, missing, skipped and repeated frames") {
  Harness h(small_config(), Backend::cpu, 5, 2);  // two sessions
  h.start("a");
  h.start("b");
  h.start("c");
  h.step({{"a", 0}, {"b", 7}}, 1, nullptr);

  auto outcome = [&](const std::vector<Row>& rows) {
    Step st;
    StepContext ctx;
    for (const Row& r : rows) {
      st.segments.push_back({r.rid, "frame", 3});
      if (r.frame >= 0) st.frames[r.rid] = r.frame;
      ctx.add_rows(r.rid, 1);
    }
    return h.kv.admit(st, ctx);
  };
  const int64_t free_before = h.kv.book().pool().free_count();
  AdmitOutcome o = outcome({{"a", 1}, {"c", 0}});
  CHECK(o.kind == AdmitOutcome::Kind::retry);
  CHECK(o.reason == "request 'c' needs a session: 0 of 2 are free and this step needs 1");
  o = outcome({{"c", 0}, {"a", 3}});
  CHECK(o.kind == AdmitOutcome::Kind::refused);
  CHECK(o.request == "a");
  CHECK(o.reason ==
        "request 'a' (segment 'frame'): broken frame clock: frame 1 was expected but frame 3 was declared (a skipped "
        "frame; it would select the wrong ring slot and rewrite history)");
  o = outcome({{"b", 7}});
  CHECK(o.reason ==
        "request 'b' (segment 'frame'): broken frame clock: frame 8 was expected but frame 7 was declared (a repeated "
        "frame; it would select the wrong ring slot and rewrite history)");
  o = outcome({{"a", -1}});
  CHECK(o.reason == "request 'a' (segment 'frame'): declares no frame clock; frame 1 was expected");
  o = outcome({{"ghost", 0}});
  CHECK(o.kind == AdmitOutcome::Kind::refused);
  CHECK(o.reason == "request 'ghost' (segment 'frame'): unknown request (never ingested)");
  CHECK(h.kv.book().pool().free_count() == free_before);  // refused batches claimed nothing
  CHECK(!h.kv.session_of("c"));

  const int32_t b_session = *h.kv.session_of("b");
  h.kv.remove_request("b");
  check_free_sessions_clear(h.kv);
  CHECK(outcome({{"a", 1}, {"c", 0}}).ok());
  CHECK(h.kv.session_of("c") == b_session);
  // b's session was zeroed on release: c starts from nothing.
  const RingSessionState fresh = h.kv.get_state("c");
  for (const HostBuffer& kv : fresh.kv) {
    const auto* bytes = static_cast<const unsigned char*>(kv.data());
    CHECK(std::all_of(bytes, bytes + kv.bytes(), [](unsigned char x) { return x == 0; }));
  }
}

TEST_CASE("get_state, more frames, load_state: the same continuation bit for bit") {
  for (Backend b : test::host_backends()) {
    RingKVConfig c = small_config();
    c.dtype = DType::bf16;
    Harness h(c, b, 9, 2);
    h.start("a");
    for (int64_t f = 0; f < 7; ++f) h.step({{"a", f}}, 2, nullptr);
    const RingSessionState saved = h.kv.get_state("a");
    std::vector<Harness::Inputs> inputs(5);
    std::vector<std::vector<std::vector<std::vector<float>>>> first;
    for (int64_t f = 7; f < 12; ++f) first.push_back(h.step({{"a", f}}, 2, &inputs[static_cast<size_t>(f - 7)]));
    h.kv.load_state("a", saved);
    CHECK(h.kv.book().find("a")->next_frame == 7);
    for (int64_t f = 7; f < 12; ++f)
      CHECK(h.step({{"a", f}}, 2, &inputs[static_cast<size_t>(f - 7)], false) == first[static_cast<size_t>(f - 7)]);

    // A state from another geometry is refused and changes nothing.
    RingKVConfig other = c;
    other.layers[1].ring_frames = 6;
    Harness o(other, b, 10, 2);
    o.start("z");
    o.step({{"z", 0}}, 1, nullptr);
    const RingSessionState foreign = o.kv.get_state("z");
    const RingSessionState before = h.kv.get_state("a");
    CHECK_THROWS_WITH_AS(h.kv.load_state("a", foreign),
                         "ring_kv load_state: layer 1: the state is bf16 [2, 2, 21, 4] with 7 frame flags, but a "
                         "session of this ring is bf16 [2, 2, 27, 4] with 9",
                         InputError);
    const RingSessionState after = h.kv.get_state("a");
    for (size_t l = 0; l < 2; ++l)
      CHECK(std::memcmp(before.kv[l].data(), after.kv[l].data(), before.kv[l].bytes()) == 0);
  }
}

TEST_CASE("ring memory: analytic, reported without allocating, flat over 10 and 10,000 frames") {
  RingKVConfig c = small_config();
  c.dtype = DType::f16;
  const RingKVMemory rep = memory_report(c);
  // [2, H, (num_sessions + 1) * (ring_frames + 1) * T, D] x 2 bytes per layer
  const std::size_t l0 = 2u * 2 * (3 * 5 * 3) * 4 * 2, l1 = 2u * 2 * (3 * 9 * 3) * 4 * 2;
  CHECK(rep.layers[0].bytes == l0);
  CHECK(rep.layers[1].bytes == l1);
  CHECK(rep.total_bytes == l0 + l1);
  CHECK(rep.bytes_per_session == (l0 + l1) / 3);
  REQUIRE(rep.groups.size() == 2);
  CHECK(rep.groups[0].kind == "local");
  CHECK(rep.groups[1].kind == "global");
  CHECK(rep.groups[1].frames_per_session == 9);

  Harness h(c, Backend::cpu, 3, 2);
  h.start("a");
  CHECK(h.kv.memory_bytes() == rep.total_bytes);
  for (int64_t f = 0; f < 10; ++f) h.step({{"a", f}}, 1, nullptr, false);
  CHECK(h.kv.memory_bytes() == rep.total_bytes);
  for (int64_t f = 10; f < 10000; ++f) h.step({{"a", f}}, 1, nullptr, false);
  CHECK(h.kv.memory_bytes() == rep.total_bytes);
}

TEST_CASE("the frame clock follows committed frames only") {
  // kv-semantics.md: a step whose passes all leave commit off moves nothing;
  // the next step may declare the same frame again, and sees what it would
  // have seen had the uncommitted step never run.
  for (Backend b : test::host_backends()) {
    Harness plain(small_config(), b, 3, 2), retried(small_config(), b, 3, 2);
    plain.start("a");
    retried.start("a");
    for (int64_t f = 0; f < 9; ++f) {
      Harness::Inputs in;
      const auto want = plain.step({{"a", f}}, 2, &in);
      retried.step({{"a", f}}, 2, nullptr, true, false);  // nothing committed
      CHECK(retried.kv.book().find("a")->next_frame == (f == 0 ? std::nullopt : std::optional<int64_t>(f)));
      CHECK(retried.step({{"a", f}}, 2, &in) == want);  // the same frame again, as if the first never ran
      CHECK(retried.kv.book().find("a")->next_frame == f + 1);
    }
  }
}
