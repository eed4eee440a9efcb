#include "engine/replay.h"

#include <string>
#include <vector>

#include "config/bounded_kv_json.h"
#include "config/ring_kv_json.h"
#include "core/errors.h"
#include "resources/bounded_kv/manager.h"
#include "resources/ring_kv/manager.h"

namespace mstar {

namespace {

using nlohmann::json;

[[noreturn]] void bad(const std::string& path, const std::string& why) {
  throw InputError(fmt::format("trace {}: {}", path, why));
}

const json& need(const json& j, const std::string& key, const std::string& path) {
  auto it = j.find(key);
  if (it == j.end()) bad(path, fmt::format("missing key '{}'", key));
  return *it;
}

// Flattens a nested array of numbers whose shape must be `shape`.
void flatten(const json& j, const std::vector<int64_t>& shape, size_t depth, const std::string& path,
             std::vector<float>& out) {
  if (depth == shape.size()) {
    if (!j.is_number()) bad(path, fmt::format("expected a number, got {}", j.dump()));
    out.push_back(j.get<float>());
    return;
  }
  if (!j.is_array() || static_cast<int64_t>(j.size()) != shape[depth])
    bad(path, fmt::format("expected an array of {} at depth {}, got {}", shape[depth], depth,
                          j.is_array() ? fmt::format("{} entries", j.size()) : j.dump()));
  for (size_t i = 0; i < j.size(); ++i) flatten(j[i], shape, depth + 1, fmt::format("{}[{}]", path, i), out);
}

std::vector<float> numbers(const json& j, const std::vector<int64_t>& shape, const std::string& path) {
  std::vector<float> out;
  flatten(j, shape, 0, path, out);
  return out;
}

// Outer array length of an optional nested array, for token counts.
int64_t tokens_in(const json& row, const char* key, const std::string& path) {
  auto it = row.find(key);
  if (it == row.end()) return 0;
  if (!it->is_array() || it->empty() || !(*it)[0].is_array())
    bad(path + "." + key, "expected [layers][tokens][heads][head_dim]");
  return static_cast<int64_t>((*it)[0].size());
}

std::vector<std::string> strings(const json& j, const std::string& path) {
  if (!j.is_array()) bad(path, "expected an array of request ids");
  std::vector<std::string> out;
  for (const auto& s : j) {
    if (!s.is_string()) bad(path, fmt::format("expected a request id, got {}", s.dump()));
    out.push_back(s.get<std::string>());
  }
  return out;
}

// ingest / reset / release / remove, applied before a step.
void lifecycle(const json& st, const std::string& path, Resource& r) {
  if (st.contains("ingest"))
    for (const auto& rid : strings(st["ingest"], path + ".ingest")) r.ingest_request(rid);
  if (st.contains("reset"))
    for (const auto& rid : strings(st["reset"], path + ".reset")) r.reset_request(rid, OnReset::keep_claim);
  if (st.contains("release"))
    for (const auto& rid : strings(st["release"], path + ".release")) r.reset_request(rid, OnReset::release);
  if (st.contains("remove"))
    for (const auto& rid : strings(st["remove"], path + ".remove")) r.remove_request(rid);
}

json nest(const std::vector<float>& flat, const std::vector<int64_t>& shape, size_t depth = 0, size_t offset = 0) {
  if (depth == shape.size()) return flat[offset];
  size_t stride = 1;
  for (size_t i = depth + 1; i < shape.size(); ++i) stride *= static_cast<size_t>(shape[i]);
  json a = json::array();
  for (int64_t i = 0; i < shape[depth]; ++i) a.push_back(nest(flat, shape, depth + 1, offset + static_cast<size_t>(i) * stride));
  return a;
}

// [rows, H, T, D] (a trace's layout) to [rows * T, H, D] (the model's).
std::vector<float> heads_inside(const std::vector<float>& x, int64_t rows, int64_t H, int64_t T, int64_t D) {
  std::vector<float> out(x.size());
  for (int64_t b = 0; b < rows; ++b)
    for (int64_t h = 0; h < H; ++h)
      for (int64_t t = 0; t < T; ++t)
        std::copy_n(x.begin() + ((b * H + h) * T + t) * D, D, out.begin() + ((b * T + t) * H + h) * D);
  return out;
}

json replay_bounded(const json& trace, const ReplayOptions& options) {
  BoundedKVSpec spec;
  spec.resource_key = "replay";
  spec.config = bounded_kv_config_from_json(need(trace, "config", "trace"), "trace.config");
  const BoundedKVConfig& c = spec.config;
  BoundedKVManager kv(spec, ResourceOptions{options.backend, options.threads});
  const int64_t Hq = trace.value("query_heads", c.num_heads);
  const int64_t H = c.num_heads, D = c.head_dim, layers = c.num_layers;
  std::optional<float> scale;
  if (trace.contains("scale")) scale = trace["scale"].get<float>();

  if (trace.contains("sources")) {
    for (size_t i = 0; i < trace["sources"].size(); ++i) {
      const json& s = trace["sources"][i];
      const std::string path = fmt::format("sources[{}]", i);
      const int id = need(s, "id", path).get<int>();
      const json& keys = need(s, "keys", path);
      if (!keys.is_array() || keys.empty() || !keys[0].is_array() || keys[0].empty() || !keys[0][0].is_array() ||
          keys[0][0].empty() || !keys[0][0][0].is_array())
        bad(path + ".keys", "expected [layers][rows][heads][len][head_dim]");
      const int64_t len = static_cast<int64_t>(keys[0][0][0].size());
      const std::vector<int64_t> shape{layers, c.rows_per_request, H, len, D};
      auto k = numbers(keys, shape, path + ".keys");
      auto v = numbers(need(s, "values", path), shape, path + ".values");
      kv.register_source(id, len);
      // [layers, rows, H, len, D] to each layer's and row's [len, H, D].
      const int64_t blocks = layers * c.rows_per_request;
      const std::vector<float> kl = heads_inside(k, blocks, H, len, D), vl = heads_inside(v, blocks, H, len, D);
      for (int64_t l = 0; l < layers; ++l)
        for (int64_t r = 0; r < c.rows_per_request; ++r) {
          const int64_t at = (l * c.rows_per_request + r) * len * H * D;
          kv.write_source(id, l, r, f32_view(kl.data() + at, Shape{len, H, D}), f32_view(vl.data() + at, Shape{len, H, D}));
        }
    }
  }

  json out_steps = json::array();
  const json& steps = need(trace, "steps", "trace");
  for (size_t si = 0; si < steps.size(); ++si) {
    const json& st = steps[si];
    const std::string path = fmt::format("steps[{}]", si);
    json result = json::object();
    lifecycle(st, path, kv);
    if (!st.contains("segments")) {  // a lifecycle-only step
      out_steps.push_back(result);
      continue;
    }

    Step step;
    for (const auto& seg : st["segments"])
      step.segments.push_back(Segment{need(seg, "request", path + ".segments").get<std::string>(),
                                      seg.value("label", std::string("step")), seg.value("span", int64_t{0})});
    if (st.contains("positions"))
      for (const auto& [rid, p] : st["positions"].items())
        step.streams[rid] = StreamPosition{p.value("source_len", int64_t{0}), p.value("written", int64_t{0}),
                                             p.value("source", 0)};
    StepContext ctx;
    const json& rows = need(st, "rows", path);
    for (const auto& row : rows) {
      const bool padding = row.value("padding", false);
      ctx.request_ids.push_back(padding ? std::string() : need(row, "request", path + ".rows").get<std::string>());
      ctx.is_padding.push_back(padding ? 1 : 0);
    }

    const AdmitOutcome adm = kv.admit(step, ctx);
    result["admit"] = json{{"outcome", to_string(adm.kind)}, {"request", adm.request}, {"reason", adm.reason}};
    if (!adm.ok()) {
      out_steps.push_back(result);
      continue;
    }
    kv.plan(step, ctx);
    const BoundedKVPlan& plan = kv.staged();
    const auto nrows = static_cast<int64_t>(rows.size());
    std::vector<int32_t> q_indptr(static_cast<size_t>(nrows + 1), 0);
    for (int64_t r = 0; r < nrows; ++r) {
      const std::string rpath = fmt::format("{}.rows[{}]", path, r);
      q_indptr[static_cast<size_t>(r + 1)] =
          q_indptr[static_cast<size_t>(r)] + static_cast<int32_t>(tokens_in(rows[static_cast<size_t>(r)], "q", rpath));
      const int64_t span = plan.kv_indptr[static_cast<size_t>(r + 1)] - plan.kv_indptr[static_cast<size_t>(r)];
      if (tokens_in(rows[static_cast<size_t>(r)], "k", rpath) != span)
        bad(rpath + ".k", fmt::format("has {} tokens but the row's span is {}",
                                      tokens_in(rows[static_cast<size_t>(r)], "k", rpath), span));
    }
    const int64_t total_q = q_indptr.back(), total_kv = plan.kv_indptr.back();
    const auto mask = st.value("mask", std::string("full"));
    if (mask != "full" && mask != "causal") bad(path + ".mask", fmt::format("expected full or causal, got '{}'", mask));

    // Per layer: gather the rows' numbers, attend, scatter outputs.
    std::vector<std::vector<float>> outs(static_cast<size_t>(nrows));
    for (int64_t layer = 0; layer < layers; ++layer) {
      std::vector<float> q, k, v;
      q.reserve(static_cast<size_t>(total_q * Hq * D));
      for (int64_t r = 0; r < nrows; ++r) {
        const json& row = rows[static_cast<size_t>(r)];
        const std::string rpath = fmt::format("{}.rows[{}]", path, r);
        const int64_t ql = q_indptr[static_cast<size_t>(r + 1)] - q_indptr[static_cast<size_t>(r)];
        const int64_t kl = plan.kv_indptr[static_cast<size_t>(r + 1)] - plan.kv_indptr[static_cast<size_t>(r)];
        if (ql) {
          auto x = numbers(row["q"][static_cast<size_t>(layer)], {ql, Hq, D}, fmt::format("{}.q[{}]", rpath, layer));
          q.insert(q.end(), x.begin(), x.end());
        }
        if (kl) {
          for (const char* key : {"k", "v"}) {
            if (!row.contains(key) || !row[key].is_array() || static_cast<int64_t>(row[key].size()) != layers)
              bad(fmt::format("{}.{}", rpath, key), fmt::format("expected {} layers", layers));
            auto x = numbers(row[key][static_cast<size_t>(layer)], {kl, H, D}, fmt::format("{}.{}[{}]", rpath, key, layer));
            (key[0] == 'k' ? k : v).insert((key[0] == 'k' ? k : v).end(), x.begin(), x.end());
          }
        }
      }
      std::vector<float> o(static_cast<size_t>(total_q * Hq * D));
      BoundedAttendArgs args;
      args.q = f32_view(q.data(), Shape{total_q, Hq, D});
      args.q_indptr = q_indptr;
      args.k = f32_view(k.data(), Shape{total_kv, H, D});
      args.v = f32_view(v.data(), Shape{total_kv, H, D});
      args.out = f32_view(o.data(), Shape{total_q, Hq, D});
      args.mask = mask == "causal" ? kernels::StepMask::causal : kernels::StepMask::full;
      args.scale = scale;
      kv.attend(layer, args);
      for (int64_t r = 0; r < nrows; ++r) {
        auto b = o.begin() + q_indptr[static_cast<size_t>(r)] * Hq * D;
        auto e = o.begin() + q_indptr[static_cast<size_t>(r + 1)] * Hq * D;
        outs[static_cast<size_t>(r)].insert(outs[static_cast<size_t>(r)].end(), b, e);
      }
    }
    if (st.value("commit", true)) kv.commit(step, ctx);

    json jrows = json::array();
    for (int64_t r = 0; r < nrows; ++r) {
      const int64_t ql = q_indptr[static_cast<size_t>(r + 1)] - q_indptr[static_cast<size_t>(r)];
      jrows.push_back(json{{"request", ctx.request_ids[static_cast<size_t>(r)]},
                           {"out", nest(outs[static_cast<size_t>(r)], {layers, ql, Hq, D})}});
    }
    result["rows"] = std::move(jrows);
    out_steps.push_back(std::move(result));
  }
  return json{{"resource", "bounded_kv"},
              {"backend", std::string(to_string(options.backend))},
              {"memory_bytes", kv.memory_bytes()},
              {"steps", std::move(out_steps)}};
}

json replay_ring(const json& trace, const ReplayOptions& options) {
  RingKVSpec spec;
  spec.resource_key = "replay";
  spec.config = ring_kv_config_from_json(need(trace, "config", "trace"), "trace.config");
  const RingKVConfig& c = spec.config;
  RingKVManager kv(spec, ResourceOptions{options.backend, options.threads});
  const int64_t H = c.num_kv_heads, D = c.head_dim, T = c.tokens_per_frame, layers = c.num_layers;
  const int64_t Hq = trace.value("query_heads", H);
  std::optional<float> scale;
  if (trace.contains("scale")) scale = trace["scale"].get<float>();

  json out_steps = json::array();
  const json& steps = need(trace, "steps", "trace");
  for (size_t si = 0; si < steps.size(); ++si) {
    const json& st = steps[si];
    const std::string path = fmt::format("steps[{}]", si);
    lifecycle(st, path, kv);
    json result = json::object();
    if (!st.contains("rows")) {
      out_steps.push_back(result);
      continue;
    }
    Step step;
    StepContext ctx;
    const json& rows = st["rows"];
    for (size_t r = 0; r < rows.size(); ++r) {
      const json& row = rows[r];
      const std::string rpath = fmt::format("{}.rows[{}]", path, r);
      const bool padding = row.value("padding", false);
      if (padding) {
        ctx.add_padding(1);
        continue;
      }
      const std::string rid = need(row, "request", rpath).get<std::string>();
      step.segments.push_back(Segment{rid, row.value("label", std::string("frame")), T});
      if (row.contains("frame")) step.frames[rid] = row["frame"].get<int64_t>();
      ctx.add_rows(rid, 1);
    }
    const AdmitOutcome adm = kv.admit(step, ctx);
    result["admit"] = json{{"outcome", to_string(adm.kind)}, {"request", adm.request}, {"reason", adm.reason}};
    if (!adm.ok()) {
      out_steps.push_back(result);
      continue;
    }
    kv.plan(step, ctx);
    const RingKVPlan& plan = kv.staged();
    const auto B = static_cast<int64_t>(rows.size());
    json passes_out = json::array();
    const json& passes = need(st, "passes", path);
    for (size_t pi = 0; pi < passes.size(); ++pi) {
      const json& pass = passes[pi];
      const std::string ppath = fmt::format("{}.passes[{}]", path, pi);
      const bool commit = pass.value("commit", pi + 1 == passes.size());
      const json& prow = need(pass, "rows", ppath);
      if (static_cast<int64_t>(prow.size()) != B) bad(ppath + ".rows", fmt::format("expected {} rows, got {}", B, prow.size()));
      std::vector<std::vector<float>> outs(static_cast<size_t>(B));
      for (int64_t layer = 0; layer < layers; ++layer) {
        std::vector<float> q, k, v;
        for (int64_t r = 0; r < B; ++r) {
          const std::string rpath = fmt::format("{}.rows[{}]", ppath, r);
          const json& row = prow[static_cast<size_t>(r)];
          for (const char* key : {"q", "k", "v"}) {
            const json& arr = need(row, key, rpath);
            if (!arr.is_array() || static_cast<int64_t>(arr.size()) != layers)
              bad(fmt::format("{}.{}", rpath, key), fmt::format("expected {} layers", layers));
            const std::vector<int64_t> shape = key[0] == 'q' ? std::vector<int64_t>{T, Hq, D} : std::vector<int64_t>{H, T, D};
            auto x = numbers(arr[static_cast<size_t>(layer)], shape, fmt::format("{}.{}[{}]", rpath, key, layer));
            auto& dst = key[0] == 'q' ? q : key[0] == 'k' ? k : v;
            dst.insert(dst.end(), x.begin(), x.end());
          }
        }
        const std::vector<float> kt = heads_inside(k, B, H, T, D), vt = heads_inside(v, B, H, T, D);
        kv.upsert(layer, f32_view(kt.data(), Shape{B * T, H, D}), f32_view(vt.data(), Shape{B * T, H, D}), commit);
        std::vector<float> o(q.size());
        kv.attend(layer, f32_view(q.data(), Shape{B * T, Hq, D}), f32_view(o.data(), Shape{B * T, Hq, D}), scale);
        for (int64_t r = 0; r < B; ++r)
          outs[static_cast<size_t>(r)].insert(outs[static_cast<size_t>(r)].end(), o.begin() + r * T * Hq * D,
                                              o.begin() + (r + 1) * T * Hq * D);
      }
      json jrows = json::array();
      for (int64_t r = 0; r < B; ++r)
        jrows.push_back(json{{"request", ctx.request_ids[static_cast<size_t>(r)]},
                             {"session", plan.session[static_cast<size_t>(r)]},
                             {"frame", plan.frame[static_cast<size_t>(r)]},
                             {"out", nest(outs[static_cast<size_t>(r)], {layers, T, Hq, D})}});
      passes_out.push_back(json{{"commit", commit}, {"rows", std::move(jrows)}});
    }
    kv.commit(step, ctx);
    result["passes"] = std::move(passes_out);
    out_steps.push_back(std::move(result));
  }
  return json{{"resource", "ring_kv"},
              {"backend", std::string(to_string(options.backend))},
              {"memory_bytes", kv.memory_bytes()},
              {"steps", std::move(out_steps)}};
}

}  // namespace

json replay_trace(const json& trace, const ReplayOptions& options) {
  if (!trace.is_object()) throw InputError("trace: expected a JSON object");
  const std::string resource = trace.value("resource", std::string("bounded_kv"));
  if (resource == "bounded_kv") return replay_bounded(trace, options);
  if (resource == "ring_kv") return replay_ring(trace, options);
  throw InputError(fmt::format("trace.resource: unknown resource '{}' (expected bounded_kv or ring_kv)", resource));
}

}  // namespace mstar
