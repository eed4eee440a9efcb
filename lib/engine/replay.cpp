#include "engine/replay.h"

#include <cmath>
#include <string>
#include <vector>

#include "resources/bounded_kv/json.h"
#include "resources/ring_kv/json.h"
#include "core/json_text.h"
#include "core/errors.h"
#include "resources/bounded_kv/manager.h"
#include "resources/ring_kv/manager.h"

namespace mstar {

namespace {

using nlohmann::json;

[[noreturn]] void bad(const std::string& path, const std::string& why) {
  throw InputError(fmt::format("trace {}: {}", path, why));
}

// Checked reads of the trace: every access names the path and the value
// when the type, the size or the range is wrong, so no malformed trace
// reaches a library error or reads past an array.
const json& need(const json& j, const std::string& key, const std::string& path) {
  if (!j.is_object()) bad(path, fmt::format("expected an object, got {}", json_excerpt(j)));
  auto it = j.find(key);
  if (it == j.end()) bad(path, fmt::format("missing key '{}'", key));
  return *it;
}
const json* find(const json& j, const std::string& key, const std::string& path) {
  if (!j.is_object()) bad(path, fmt::format("expected an object, got {}", json_excerpt(j)));
  auto it = j.find(key);
  return it == j.end() ? nullptr : &*it;
}
const json& array(const json& j, const std::string& path) {
  if (!j.is_array()) bad(path, fmt::format("expected an array, got {}", json_excerpt(j)));
  return j;
}
const json& object(const json& j, const std::string& path) {
  if (!j.is_object()) bad(path, fmt::format("expected an object, got {}", json_excerpt(j)));
  return j;
}
int64_t integer(const json& j, const std::string& path, int64_t lo, int64_t hi) {
  const bool in_range = j.is_number_integer() &&
                        (j.is_number_unsigned() ? j.get<uint64_t>() <= static_cast<uint64_t>(hi)
                                                : j.get<int64_t>() >= lo && j.get<int64_t>() <= hi);
  if (!in_range || j.get<int64_t>() < lo) bad(path, fmt::format("expected an integer in [{}, {}], got {}", lo, hi, json_excerpt(j)));
  return j.get<int64_t>();
}
int64_t integer_or(const json& j, const std::string& key, const std::string& path, int64_t lo, int64_t hi, int64_t dflt) {
  const json* v = find(j, key, path);
  return v ? integer(*v, path + "." + key, lo, hi) : dflt;
}
std::string text(const json& j, const std::string& path) {
  if (!j.is_string()) bad(path, fmt::format("expected a string, got {}", json_excerpt(j)));
  return j.get<std::string>();
}
std::string text_or(const json& j, const std::string& key, const std::string& path, const std::string& dflt) {
  const json* v = find(j, key, path);
  return v ? text(*v, path + "." + key) : dflt;
}
bool flag_or(const json& j, const std::string& key, const std::string& path, bool dflt) {
  const json* v = find(j, key, path);
  if (!v) return dflt;
  if (!v->is_boolean()) bad(path + "." + key, fmt::format("expected true or false, got {}", json_excerpt(*v)));
  return v->get<bool>();
}
// A number that is finite as an f32 (the kernels compute in f32).
float real(const json& j, const std::string& path) {
  if (!j.is_number() || !std::isfinite(j.get<double>()) || std::fabs(j.get<double>()) > 3.0e38)
    bad(path, fmt::format("expected a finite f32 number, got {}", json_excerpt(j)));
  return j.get<float>();
}

// Flattens a nested array of numbers whose shape must be `shape`.
void flatten(const json& j, const std::vector<int64_t>& shape, size_t depth, const std::string& path,
             std::vector<float>& out) {
  if (depth == shape.size()) {
    out.push_back(real(j, path));
    return;
  }
  if (!j.is_array() || static_cast<int64_t>(j.size()) != shape[depth])
    bad(path, fmt::format("expected an array of {} at depth {}, got {}", shape[depth], depth,
                          j.is_array() ? fmt::format("{} entries", j.size()) : json_excerpt(j)));
  for (size_t i = 0; i < j.size(); ++i) flatten(j[i], shape, depth + 1, fmt::format("{}[{}]", path, i), out);
}

std::vector<float> numbers(const json& j, const std::vector<int64_t>& shape, const std::string& path) {
  std::vector<float> out;
  flatten(j, shape, 0, path, out);
  return out;
}

// The tokens of an optional [layers][tokens][heads][head_dim] array: its
// first layer's length, after checking it has exactly `layers` layers (each
// layer's own shape is checked when it is read).
int64_t tokens_in(const json& row, const char* key, int64_t layers, const std::string& path) {
  const json* v = find(row, key, path);
  if (!v) return 0;
  if (!v->is_array() || static_cast<int64_t>(v->size()) != layers || !(*v)[0].is_array())
    bad(path + "." + key, fmt::format("expected [layers = {}][tokens][heads][head_dim]", layers));
  return static_cast<int64_t>((*v)[0].size());
}

std::vector<std::string> strings(const json& j, const std::string& path) {
  if (!j.is_array()) bad(path, "expected an array of request ids");
  std::vector<std::string> out;
  for (const auto& s : j) {
    if (!s.is_string() || s.get<std::string>().empty())
      bad(path, fmt::format("expected a request id, got {}", json_excerpt(s)));
    out.push_back(s.get<std::string>());
  }
  return out;
}

// ingest / reset / release / remove, applied before a step.
void lifecycle(const json& st, const std::string& path, Resource& r) {
  object(st, path);
  if (const json* v = find(st, "ingest", path))
    for (const auto& rid : strings(*v, path + ".ingest")) r.ingest_request(rid);
  if (const json* v = find(st, "reset", path))
    for (const auto& rid : strings(*v, path + ".reset")) r.reset_request(rid, OnReset::keep_claim);
  if (const json* v = find(st, "release", path))
    for (const auto& rid : strings(*v, path + ".release")) r.reset_request(rid, OnReset::release);
  if (const json* v = find(st, "remove", path))
    for (const auto& rid : strings(*v, path + ".remove")) r.remove_request(rid);
}

// query_heads: a positive multiple of the KV heads (grouped-query attention).
int64_t query_heads(const json& trace, int64_t kv_heads) {
  const int64_t hq = integer_or(trace, "query_heads", "trace", 1, 1 << 16, kv_heads);
  if (hq % kv_heads != 0) bad("trace.query_heads", fmt::format("{} is not a multiple of the {} KV heads", hq, kv_heads));
  return hq;
}

std::optional<float> scale_of(const json& trace) {
  const json* v = find(trace, "scale", "trace");
  if (!v) return std::nullopt;
  return real(*v, "trace.scale");
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
  const int64_t Hq = query_heads(trace, c.num_heads);
  const int64_t H = c.num_heads, D = c.head_dim, layers = c.num_layers;
  const std::optional<float> scale = scale_of(trace);

  if (const json* sources = find(trace, "sources", "trace")) {
    array(*sources, "trace.sources");
    for (size_t i = 0; i < sources->size(); ++i) {
      const json& s = (*sources)[i];
      const std::string path = fmt::format("sources[{}]", i);
      const int id = static_cast<int>(integer(need(s, "id", path), path + ".id", INT32_MIN, INT32_MAX));
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
  const json& steps = array(need(trace, "steps", "trace"), "trace.steps");
  for (size_t si = 0; si < steps.size(); ++si) {
    const json& st = steps[si];
    const std::string path = fmt::format("steps[{}]", si);
    json result = json::object();
    lifecycle(st, path, kv);
    const json* segments = find(st, "segments", path);
    if (!segments) {  // a lifecycle-only step
      out_steps.push_back(result);
      continue;
    }

    Step step;
    array(*segments, path + ".segments");
    for (size_t i = 0; i < segments->size(); ++i) {
      const json& seg = (*segments)[i];
      const std::string sp = fmt::format("{}.segments[{}]", path, i);
      step.segments.push_back(Segment{text(need(seg, "request", sp), sp + ".request"), text_or(seg, "label", sp, "step"),
                                      integer_or(seg, "span", sp, INT64_MIN, INT64_MAX, 0)});
    }
    if (const json* positions = find(st, "positions", path))
      for (const auto& [rid, p] : object(*positions, path + ".positions").items()) {
        const std::string pp = fmt::format("{}.positions.{}", path, rid);
        step.streams[rid] = StreamPosition{integer_or(p, "source_len", pp, INT64_MIN, INT64_MAX, 0),
                                           integer_or(p, "written", pp, INT64_MIN, INT64_MAX, 0),
                                           static_cast<int>(integer_or(p, "source", pp, INT32_MIN, INT32_MAX, 0))};
      }
    StepContext ctx;
    const json& rows = array(need(st, "rows", path), path + ".rows");
    for (size_t r = 0; r < rows.size(); ++r) {
      const std::string rpath = fmt::format("{}.rows[{}]", path, r);
      const bool padding = flag_or(rows[r], "padding", rpath, false);
      ctx.request_ids.push_back(padding ? std::string() : text(need(rows[r], "request", rpath), rpath + ".request"));
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
      const int64_t q_tokens = tokens_in(rows[static_cast<size_t>(r)], "q", layers, rpath);
      if (q_tokens > INT32_MAX - q_indptr[static_cast<size_t>(r)]) bad(rpath + ".q", "more queries than a step can address");
      q_indptr[static_cast<size_t>(r + 1)] = q_indptr[static_cast<size_t>(r)] + static_cast<int32_t>(q_tokens);
      const int64_t span = plan.kv_indptr[static_cast<size_t>(r + 1)] - plan.kv_indptr[static_cast<size_t>(r)];
      for (const char* key : {"k", "v"})
        if (const int64_t t = tokens_in(rows[static_cast<size_t>(r)], key, layers, rpath); t != span)
          bad(fmt::format("{}.{}", rpath, key), fmt::format("has {} tokens but the row's span is {}", t, span));
    }
    const int64_t total_q = q_indptr.back(), total_kv = plan.kv_indptr.back();
    const auto mask = text_or(st, "mask", path, "full");
    if (mask != "full" && mask != "causal") bad(path + ".mask", fmt::format("expected full or causal, got '{}'", mask));

    // Per layer: gather the rows' numbers, attend, scatter outputs.
    std::vector<std::vector<float>> outs(static_cast<size_t>(nrows));
    for (int64_t layer = 0; layer < layers; ++layer) {
      std::vector<float> q, k, v;
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
            auto x = numbers(row[key][static_cast<size_t>(layer)], {kl, H, D}, fmt::format("{}.{}[{}]", rpath, key, layer));
            (key[0] == 'k' ? k : v).insert((key[0] == 'k' ? k : v).end(), x.begin(), x.end());
          }
        }
      }
      std::vector<float> o(static_cast<size_t>(total_q * Hq * D));
      LayerPass args;
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
    if (flag_or(st, "commit", path, true)) kv.commit(step, ctx);

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
  const int64_t Hq = query_heads(trace, H);
  const std::optional<float> scale = scale_of(trace);

  json out_steps = json::array();
  const json& steps = array(need(trace, "steps", "trace"), "trace.steps");
  for (size_t si = 0; si < steps.size(); ++si) {
    const json& st = steps[si];
    const std::string path = fmt::format("steps[{}]", si);
    lifecycle(st, path, kv);
    json result = json::object();
    const json* row_list = find(st, "rows", path);
    if (!row_list) {
      out_steps.push_back(result);
      continue;
    }
    Step step;
    StepContext ctx;
    const json& rows = array(*row_list, path + ".rows");
    for (size_t r = 0; r < rows.size(); ++r) {
      const json& row = rows[r];
      const std::string rpath = fmt::format("{}.rows[{}]", path, r);
      if (flag_or(row, "padding", rpath, false)) {
        ctx.add_padding(1);
        continue;
      }
      const std::string rid = text(need(row, "request", rpath), rpath + ".request");
      step.segments.push_back(Segment{rid, text_or(row, "label", rpath, "frame"), T});
      if (const json* f = find(row, "frame", rpath)) step.frames[rid] = integer(*f, rpath + ".frame", INT64_MIN, INT64_MAX);
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
    const json& passes = array(need(st, "passes", path), path + ".passes");
    for (size_t pi = 0; pi < passes.size(); ++pi) {
      const json& pass = passes[pi];
      const std::string ppath = fmt::format("{}.passes[{}]", path, pi);
      const bool commit = flag_or(pass, "commit", ppath, pi + 1 == passes.size());
      const json& prow = array(need(pass, "rows", ppath), ppath + ".rows");
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
  const std::string resource = text_or(trace, "resource", "trace", "bounded_kv");
  if (resource == "bounded_kv") return replay_bounded(trace, options);
  if (resource == "ring_kv") return replay_ring(trace, options);
  throw InputError(fmt::format("trace.resource: unknown resource '{}' (expected bounded_kv or ring_kv)", resource));
}

}  // namespace mstar
