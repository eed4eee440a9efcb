#include "bench/engine_bench.h"

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <fstream>
#include <functional>
#include <memory>
#include <optional>

#include <fmt/format.h>

#include "bench/compute.h"
#include "bench/machine.h"
#include "bench/matmul.h"
#include "bench/memory.h"
#include "bench/neighbours.h"
#include "bench/step_flops.h"
#include "core/errors.h"
#include "kernels/cpu/isa.h"
#include "kernels/cpu/matmul_cpu.h"
#include "engine/engine.h"
#include "engine/run.h"
#include "models/stored_tensors.h"
#include "models/weights.h"
#include "resources/bounded_kv/config.h"

namespace mstar::bench {

namespace {
using Clock = std::chrono::steady_clock;

double median(std::vector<double> v) { return percentile(std::move(v), 50); }

// One request's cache, fed directly (no scheduler): what the stream and
// prefill benchmarks time.
struct Stream {
  ResourceSet kv;
  int64_t written = 0;
  Stream(const BoundedKVSpec& s, const ModelOptions& o) : kv({s}, ResourceOptions{o.backend, o.threads}) {
    kv.ingest_request("s");
  }
  // Writes `tokens` and returns the seconds it took.
  double feed(TokenModel& m, const std::vector<int32_t>& tokens, int64_t rows) {
    Step st;
    st.segments = {{"s", "bench", static_cast<int64_t>(tokens.size())}};
    st.streams = {{"s", {0, written, 0}}};
    StepContext ctx;
    ctx.add_rows("s", static_cast<int>(rows));
    const auto t0 = Clock::now();
    if (!kv.admit(st, ctx).ok()) throw InputError("bench stream: step refused");
    kv.plan(st, ctx);
    (void)m.step(kv, st, ctx, std::vector<std::vector<int32_t>>(static_cast<size_t>(rows), tokens));
    kv.commit(st, ctx);
    written += static_cast<int64_t>(tokens.size());
    return std::chrono::duration<double>(Clock::now() - t0).count();
  }
};

// The model and the single-slot bounded spec of a speech deployment.
struct SpeechBench {
  Weights weights;
  std::unique_ptr<Model> built;
  TokenModel* model;
  BoundedKVSpec spec;
  ModelOptions options;
};

SpeechBench speech_bench(const ResolvedDeployment& d, const char* what) {
  const BoundedKVSpec* bounded = d.model.resources.size() == 1 ? d.model.resources[0].spec.as<BoundedKVSpec>() : nullptr;
  if (d.model.family->task != "speech" || !bounded)
    throw ConfigError(fmt::format("mstar-bench {} needs a speech deployment with one bounded resource", what));
  const ModelOptions options = model_options(d.deployment);
  SpeechBench b{d.model.load_weights(options.backend), nullptr, nullptr, *bounded, options};
  b.built = d.model.family->make(*d.model.arch, b.weights, b.options);
  b.model = &dynamic_cast<TokenModel&>(*b.built);
  b.spec.config.max_slots = 1;
  b.spec.config.min_source_len = 0;
  b.spec.config.max_source_len = 0;
  return b;
}

// The dtype of a checkpoint's matrices, as stored: its MLP's, most of them.
DType matrix_dtype(const ResolvedDeployment& d) {
  const auto index = index_weights(d.model.weight_files());
  if (auto it = index.find("model.layers.0.mlp.up_proj.weight"); it != index.end() && it->second.dtype)
    return *it->second.dtype;
  throw InputError(fmt::format("{}: no model.layers.0.mlp.up_proj.weight", d.model.checkpoint.string()));
}

// The instruction the trunk's products take at `rows` rows (one per stream):
// tdpbf16ps where they take AMX tiles, vdpbf16ps for bf16 activations on
// AVX512_BF16 over bf16 weights, else the f32 FMA.
kernels::PeakOp product_op(const ResolvedDeployment& d, const CheckpointOptions& o, int64_t rows) {
  const kernels::CpuIsa isa = kernels::best_cpu_isa();
  kernels::MatmulParams p;
  p.rows = rows;
  p.x_dtype = o.activations;
  p.w_dtype = matrix_dtype(d);
  if (kernels::matmul_path(p, isa) == kernels::MatmulPath::tiles) return kernels::PeakOp::tiles;
  const bool pairs = o.activations == DType::bf16 && kernels::has_bf16_pairs(isa) && p.w_dtype == DType::bf16;
  return pairs ? kernels::PeakOp::bf16_dot : kernels::PeakOp::fma;
}

size_t column(const Table& t, const std::string& name) {
  const auto it = std::find(t.columns.begin(), t.columns.end(), name);
  MSTAR_ASSERT(it != t.columns.end(), "bench table: no such column");
  return static_cast<size_t>(it - t.columns.begin());
}

// The sweep's rows with their products' arithmetic: `flops` a stream per
// step, over the median step, and that beside `peak` (GFLOP/s) when given.
// `peak`: the peak GFLOP/s of the instruction the products take at a count
// of streams (none on the cuda backend).
void add_product_columns(Table& t, double flops, const std::function<double(int64_t)>& peak) {
  const size_t streams = column(t, "streams"), step = column(t, "step_p50_ms");
  for (const char* c : {"product_gflop", "product_gflops"}) t.columns.emplace_back(c);
  if (peak) t.columns.insert(t.columns.end(), {"peak_gflops", "of_peak"});
  for (auto& row : t.rows) {
    const double gflop = row[streams].get<double>() * flops / 1e9;
    const double step_ms = row[step].get<double>();
    const double gflops = step_ms > 0 ? gflop / (step_ms / 1e3) : 0.0;
    row.insert(row.end(), {gflop, gflops});
    if (peak) {
      const double g = peak(row[streams].get<int64_t>());
      row.insert(row.end(), {g, g > 0 ? gflops / g : 0.0});
    }
  }
}
}  // namespace

int64_t current_rss_bytes() {
  std::ifstream f("/proc/self/statm");
  int64_t size = 0, resident = 0;
  f >> size >> resident;
  return resident * sysconf(_SC_PAGESIZE);
}

ResolvedDeployment resolve_or_throw(const std::filesystem::path& config, const std::vector<std::string>& sets) {
  Diagnostics diags;
  std::vector<SetOverride> so;
  for (const auto& s : sets) so.push_back(parse_set(s));
  auto r = load_deployment(config, so, diags);
  if (!r) throw ConfigError(diags.str());
  return *r;
}

Table bench_run(const ResolvedDeployment& d, int repeats) {
  Table t{{"repeat", "requests", "produced", "per_s", "step_p50_ms", "step_p95_ms", "step_p99_ms", "first_p50_ms",
           "first_p95_ms", "host_share", "peak_rss_mib"},
          {}};
  std::vector<double> rates;
  for (int r = 0; r < repeats; ++r) {
    auto engine = Engine::create(d);
    const RunStats s = run_lines(*engine, *workload_lines(d), {}, [](const Event&) {});
    const double host = s.host_ms.sum(), step = s.step_ms.sum();
    const double rate = static_cast<double>(s.produced) / s.seconds;
    rates.push_back(rate);
    t.rows.push_back({r + 1, s.requests_done, s.produced, rate, s.step_ms.percentile(50), s.step_ms.percentile(95),
                      s.step_ms.percentile(99), s.first_chunk_ms.percentile(50), s.first_chunk_ms.percentile(95),
                      step > 0 ? host / step : 0.0, static_cast<double>(s.peak_rss_bytes) / (1 << 20)});
  }
  std::sort(rates.begin(), rates.end());
  t.rows.push_back({"median", "", "", rates[rates.size() / 2], "", "", "", "", "", "", ""});
  return t;
}

ConcurrencySweep resolve_concurrency(const std::filesystem::path& config, const std::vector<std::string>& sets,
                                     const std::vector<int64_t>& streams, int64_t tokens) {
  MSTAR_ASSERT(!streams.empty(), "resolve_concurrency: at least one stream count");
  const ResolvedDeployment base = resolve_or_throw(config, sets);
  ConcurrencySweep sweep{streams, {}, base.model.family->task == "speech"};
  int64_t rows = 1;
  for (const auto& res : base.model.resources) rows = std::max(rows, res.spec->rows_per_request());
  for (int64_t n : streams) {
    std::vector<std::string> s = sets;
    s.push_back(fmt::format("workload.requests.count={}", n));
    s.push_back("workload.requests.arrival_every=0");
    s.push_back(fmt::format("workload.requests.{}={}", sweep.tts ? "max_tokens" : "frames", tokens));
    for (const auto& res : base.model.resources)
      s.push_back(fmt::format("resources.{}.{}={}", res.key(), res.spec->pool_field(), n));
    s.push_back(fmt::format("scheduler.max_batch={}", n * rows));
    try {
      sweep.deployments.push_back(resolve_or_throw(config, s));
    } catch (const ConfigError& e) {
      // The overrides are the sweep's own, not the user's: say which options made them.
      throw ConfigError(
          fmt::format("the sweep's deployment at --streams {} with --tokens {} is refused:\n{}", n, tokens, e.what()));
    }
  }
  return sweep;
}

Table bench_concurrency(const ConcurrencySweep& sweep, int rounds) {
  MSTAR_ASSERT(!sweep.streams.empty() && sweep.deployments.size() == sweep.streams.size() && rounds >= 1,
               "bench_concurrency: a deployment per stream count and at least one round");
  const std::vector<int64_t>& streams = sweep.streams;
  const std::vector<ResolvedDeployment>& deployments = sweep.deployments;
  const bool tts = sweep.tts;
  Table t{{"round", "streams", tts ? "tokens" : "frames", "aggregate_per_s", "per_stream_per_s", "aggregate_scaling",
           "step_p50_ms", "step_scaling", "host_p50_ms", "host_share"},
          {}};
  constexpr size_t kFirstMeasure = 3;  // aggregate_per_s onwards
  // [count][column - kFirstMeasure][round]: what the median rows take.
  std::vector<std::vector<std::vector<double>>> seen(streams.size(),
                                                     std::vector<std::vector<double>>(t.columns.size() - kFirstMeasure));
  for (int round = 1; round <= rounds; ++round) {
    double first_agg = 0, first_rate = 0;  // the first count's in this round
    for (size_t i = 0; i < streams.size(); ++i) {
      auto engine = Engine::create(deployments[i]);
      const RunStats st = run_lines(*engine, *workload_lines(deployments[i]), {}, [](const Event&) {});
      const double host = st.host_ms.sum(), step = st.step_ms.sum();
      const double agg = static_cast<double>(st.produced) / st.seconds;
      const double step_p50 = st.step_ms.percentile(50);
      const double rate = step_p50 > 0 ? static_cast<double>(streams[i]) / step_p50 : 0.0;  // decode, per ms
      if (i == 0) first_agg = agg, first_rate = rate;
      const std::vector<double> m{agg,
                                  agg / static_cast<double>(streams[i]),
                                  first_agg > 0 ? agg / first_agg : 0.0,
                                  step_p50,
                                  first_rate > 0 ? rate / first_rate : 0.0,
                                  st.host_ms.percentile(50),
                                  step > 0 ? host / step : 0.0};
      std::vector<nlohmann::json> row{round, streams[i], st.produced};
      for (size_t c = 0; c < m.size(); ++c) {
        row.emplace_back(m[c]);
        seen[i][c].push_back(m[c]);
      }
      t.rows.push_back(std::move(row));
    }
  }
  if (rounds > 1)
    for (size_t i = 0; i < streams.size(); ++i) {
      std::vector<nlohmann::json> row{"median", streams[i], ""};
      for (const auto& column : seen[i]) row.emplace_back(median(column));
      t.rows.push_back(std::move(row));
    }
  return t;
}

CheckpointBench bench_checkpoint(const std::filesystem::path& folder, const CheckpointOptions& o) {
  if (o.products > 0 && o.backend != Backend::cpu)
    throw ConfigError(fmt::format("--products {}: times the cpu backend's products, not --backend {}", o.products,
                                  to_string(o.backend)));
  if (o.neighbours > 0 && o.roofline == 0 && o.streams.empty())
    throw ConfigError(fmt::format(
        "--neighbours {}: they run beside the --streams sweep and the --roofline pairs; give either", o.neighbours));
  namespace fs = std::filesystem;
  // The manifest and deployment written for the folder, removed however the
  // benchmark ends.
  struct TempDir {
    fs::path path = fs::temp_directory_path() / fmt::format("mstar-bench-checkpoint-{}", ::getpid());
    TempDir() { fs::create_directories(path); }
    ~TempDir() {
      std::error_code ec;
      fs::remove_all(path, ec);
    }
  } temp;
  const fs::path& dir = temp.path;
  // The query window takes a whole prefill prompt in one chunk.
  std::ofstream(dir / "m.yaml") << fmt::format(
      "name: bench\nkind: {}\ncheckpoint: {}\nresources:\n  - resource_key: kv\n    type: bounded_kv\n"
      "    nodes: attn.*\n    config:\n      rows_per_request: 1\n      max_source_len: 64\n"
      "      retention: {{sink: 4, window: {}}}\n      query_window: {}\n",
      o.kind, fs::absolute(folder).string(), o.window, std::max<int64_t>(64, o.prefill));
  std::ofstream(dir / "c.yaml") << fmt::format(
      "model: m.yaml\nbackend: {}\nkv_dtype: {}\nactivations: {}\nthreads: {}\nworkload:\n  voices:\n"
      "    v: {{seed: 1, length: 64}}\n"
      "  requests: {{count: 1, voices: [v], prompt_tokens: 16, max_tokens: {}, sampling: {{temperature: 0.8}}}}\n",
      to_string(o.backend), to_string(o.kv_dtype), to_string(o.activations), o.threads, o.tokens);
  CheckpointBench out;
  const ResolvedDeployment d = resolve_or_throw(dir / "c.yaml", {});
  std::optional<ConcurrencySweep> sweep;
  if (!o.streams.empty()) sweep = resolve_concurrency(dir / "c.yaml", {}, o.streams, o.tokens);
  {
    const int64_t rss_before = current_rss_bytes();
    const auto t0 = Clock::now();
    auto engine = Engine::create(d);
    const double load_s = std::chrono::duration<double>(Clock::now() - t0).count();
    out.load = Table{{"load_s", "weights_mib", "rss_before_mib", "rss_after_load_mib"},
                     {{load_s, static_cast<double>(d.model.weights_bytes) / (1 << 20),
                       static_cast<double>(rss_before) / (1 << 20), static_cast<double>(current_rss_bytes()) / (1 << 20)}}};
  }
  if (sweep) {
    // The machine's peak, once, before the sweep (not beside its engines).
    std::function<double(int64_t)> peak;
    if (o.backend == Backend::cpu) {
      const ComputePeak p = measure_compute_peak(o.threads, 5);
      peak = [p, &d, &o](int64_t streams) { return peak_gflops(p, product_op(d, o, streams)); };
    }
    {
      const Neighbours busy(o.neighbours);
      out.sweep = bench_concurrency(*sweep, o.rounds);
    }
    add_product_columns(out.sweep, decode_product_flops(d.model.arch->trunk(), d.model.arch->vocab_size()), peak);
  }
  if (o.products > 0) {
    out.products = bench_step_products(d.model.arch->trunk(), d.model.arch->vocab_size(), matrix_dtype(d), o.activations,
                                       o.products, o.threads, 10);
    // The sweep's step at the same count: its median row, or with one round its only row.
    std::optional<double> step;
    if (!out.sweep.rows.empty()) {
      const size_t streams = column(out.sweep, "streams"), step_ms = column(out.sweep, "step_p50_ms");
      for (const auto& row : out.sweep.rows)
        if (row[streams].get<int64_t>() == o.products) step = row[step_ms].get<double>();
    }
    out.products.columns.emplace_back("of_step");
    for (auto& row : out.products.rows) row.emplace_back("");
    if (step && *step > 0) {
      auto& all = out.products.rows.back();
      all.back() = all[column(out.products, "step_ms")].get<double>() / *step;
    }
  }
  if (!o.depths.empty()) out.depths = stream_table(bench_stream(d, o.depths, o.probe));
  if (o.prefill > 0) out.prefill = bench_prefill(d, o.prefill, 3);
  if (o.roofline > 0) out.roofline = bench_roofline(d, o.roofline, o.neighbours);
  return out;
}

Table bench_step_products(const TrunkShape& t, int64_t vocab, DType weights, DType activations, int64_t rows,
                          int threads, int repeats) {
  struct Product {
    std::string name;
    int64_t in, out, calls;  // calls a step
  };
  const int64_t qd = t.heads * t.head_dim, kd = t.kv_heads * t.head_dim;
  std::vector<Product> products;
  for (const Product& p : {Product{"q", t.width, qd, t.layers}, Product{"k", t.width, kd, t.layers},
                           Product{"v", t.width, kd, t.layers}, Product{"o", qd, t.width, t.layers},
                           Product{"gate", t.width, t.mlp_width, t.layers}, Product{"up", t.width, t.mlp_width, t.layers},
                           Product{"down", t.mlp_width, t.width, t.layers}, Product{"logits", t.width, vocab, 1}}) {
    auto same = std::find_if(products.begin(), products.end(),
                             [&](const Product& q) { return q.in == p.in && q.out == p.out; });
    if (same == products.end()) {
      products.push_back(p);
    } else {
      same->name += "/" + p.name;  // no comma: CSV cells are not quoted
      same->calls += p.calls;
    }
  }
  // q8_0 activations quantise the products over block types only (Trunk::product).
  const char* act = activations == DType::bf16                                   ? "-bf16-act"
                    : activations == DType::q8_0 && !is_element_type(weights) ? "-q8-act"
                                                                                : "";
  const int64_t llc = machine().llc_bytes;
  Table tab{{"products", "calls", "rows", "in", "out", "dtype", "median_us", "step_ms", "share"}, {}};
  double total_ms = 0;
  std::vector<double> ms;
  for (const Product& p : products) {
    const MatmulShape shape{rows, p.in, p.out, weights, threads};
    // As the step lays the weights out (Weights::arrange_for, kernels::matmul_layout).
    const bool panels = kernels::matmul_layout(Backend::cpu, weights, p.in) == kernels::WeightLayout::pair_panels;
    const std::string method = std::string(panels ? "pair-panels" : "mstar") + act;
    const MatmulResult r = bench_matmul(shape, true, repeats, llc, {method}).at(0);
    ms.push_back(static_cast<double>(p.calls) * r.median_us / 1e3);
    total_ms += ms.back();
    tab.rows.push_back({p.name, p.calls, rows, p.in, p.out, std::string(to_string(weights)), r.median_us, ms.back(), 0.0});
  }
  for (size_t i = 0; i < products.size(); ++i) tab.rows[i].back() = total_ms > 0 ? ms[i] / total_ms : 0.0;
  tab.rows.push_back({"all", "", rows, "", "", "", "", total_ms, 1.0});
  return tab;
}

Table bench_roofline(const ResolvedDeployment& d, int pairs, int neighbours) {
  MSTAR_ASSERT(pairs >= 1, "bench_roofline: a pair at least");
  const int threads = static_cast<int>(d.deployment.threads);
  SpeechBench sb = speech_bench(d, "checkpoint --roofline");
  // The same model on one thread, over the same weights: over_one weighs
  // the threads, not two copies of the weights. Two models loaded apart,
  // both on one thread, measured over_one 0.968 to 1.01 (median 0.977, 18
  // runs of 20 pairs; 0.975 to 0.991 with the pair's order swapped), one
  // model over shared weights 0.996 to 1.00 (6 runs of `mstar-bench
  // checkpoint --roofline 20`, each model on one thread).
  ModelOptions one_options = sb.options;
  one_options.threads = 1;
  std::unique_ptr<Model> one_built;
  TokenModel* one = nullptr;
  if (threads > 1) {
    one_built = d.model.family->make(*d.model.arch, sb.weights, one_options);
    one = &dynamic_cast<TokenModel&>(*one_built);
  }
  const ReadProbe probe(threads, int64_t{512} << 20);
  const auto bytes = static_cast<double>(d.model.weights_bytes);
  // Fresh streams: a short voice-like prompt, then single tokens.
  const int64_t rows = sb.spec.config.rows_per_request;
  Stream s(sb.spec, sb.options);
  std::optional<Stream> s1;
  s.feed(*sb.model, std::vector<int32_t>(16, 7), rows);
  if (one) {
    s1.emplace(sb.spec, one_options);
    s1->feed(*one, std::vector<int32_t>(16, 7), rows);
  }
  Table t{{"pair", "read_gbs", "read4_gbs", "step_ms", "of_read"}, {}};
  if (one) t.columns.insert(t.columns.end(), {"one_thread_ms", "over_one"});
  std::vector<std::vector<double>> seen(t.columns.size() - 1);
  {
    const Neighbours busy(neighbours);
    for (int i = 0; i < pairs; ++i) {
      const ReadProbe::Reads r = probe.measure();
      // The untimed step first: the pool's helpers may have gone to sleep
      // during the read (bench_stream says why).
      s.feed(*sb.model, {5}, rows);
      const double step = s.feed(*sb.model, {5}, rows);
      std::vector<double> m{r.read_gbs, r.read4_gbs, step * 1e3,
                            bytes / step / 1e9 / std::max(r.read_gbs, r.read4_gbs)};
      if (one) {
        s1->feed(*one, {5}, rows);
        const double step1 = s1->feed(*one, {5}, rows);
        m.insert(m.end(), {step1 * 1e3, step1 / step});
      }
      std::vector<nlohmann::json> row{i + 1};
      for (size_t c = 0; c < m.size(); ++c) {
        row.emplace_back(m[c]);
        seen[c].push_back(m[c]);
      }
      t.rows.push_back(std::move(row));
    }
  }
  for (double p : {10.0, 50.0, 90.0}) {
    std::vector<nlohmann::json> row{p == 50.0 ? std::string("median") : fmt::format("p{:.0f}", p)};
    for (const auto& column : seen) row.emplace_back(percentile(column, p));
    t.rows.push_back(std::move(row));
  }
  return t;
}

Table bench_prefill(const ResolvedDeployment& d, int64_t tokens, int repeats) {
  SpeechBench sb = speech_bench(d, "prefill");
  const int64_t chunk = sb.spec.config.query_window.value_or(256);
  std::vector<double> seconds;
  for (int r = 0; r < repeats + 1; ++r) {  // the first is a warm-up
    Stream s(sb.spec, sb.options);
    double t = 0;
    for (int64_t at = 0; at < tokens; at += chunk)
      t += s.feed(*sb.model, std::vector<int32_t>(static_cast<size_t>(std::min(chunk, tokens - at)), 7),
                  sb.spec.config.rows_per_request);
    if (r > 0) seconds.push_back(t);
  }
  std::sort(seconds.begin(), seconds.end());
  const double med = seconds[seconds.size() / 2];
  return Table{{"prompt_tokens", "chunk", "median_s", "tokens_per_s"},
               {{tokens, chunk, med, static_cast<double>(tokens) / med}}};
}

std::vector<StreamPoint> bench_stream(const ResolvedDeployment& d, std::vector<int64_t> lengths, int probe,
                                      const Progress& progress) {
  std::sort(lengths.begin(), lengths.end());  // one stream grows through them
  SpeechBench sb = speech_bench(d, "stream");
  TokenModel& model = *sb.model;
  const ModelOptions options = sb.options;
  const BoundedKVSpec& bspec = sb.spec;
  const int64_t longest = *std::max_element(lengths.begin(), lengths.end()) + probe + 1;
  // The same model with a cache that keeps everything: a window as long as
  // the longest stream.
  BoundedKVSpec full_spec = bspec;
  full_spec.config.retention = SinkWindow{0, longest, false};
  const int64_t chunk = bspec.config.query_window.value_or(256);
  full_spec.config.query_window = chunk;
  const int64_t bytes_per_entry = bspec.config.num_layers * bspec.config.rows_per_request * bspec.config.num_heads * 2 *
                                  bspec.config.head_dim * static_cast<int64_t>(row_bytes(bspec.config.dtype, 1));

  const int64_t rows = bspec.config.rows_per_request;
  Stream bounded(bspec, options), full(full_spec, options);
  const int64_t retained = bspec.config.max_retained();
  std::vector<StreamPoint> out;
  // Both streams' tokens, the probes' included.
  const int64_t total = 2 * (lengths.back() + static_cast<int64_t>(lengths.size()) * (probe + 1));
  const auto report = [&] {
    if (progress) progress("stream", std::min(total, bounded.written + full.written), total);
  };
  for (int64_t L : lengths) {
    for (Stream* s : {&bounded, &full}) {
      while (s->written < L) {
        const int64_t n = std::min(chunk, L - s->written);
        s->feed(model, std::vector<int32_t>(static_cast<size_t>(n), 7), rows);
        report();
      }
    }
    StreamPoint p{L, 0, 0, 0, 0, 0};
    // One untimed step each first (the pool's threads may be asleep after
    // the prefill), then the median step: the first step after a pause ran
    // up to 100x slower on tiny models.
    bounded.feed(model, {5}, rows);
    full.feed(model, {5}, rows);
    std::vector<double> tb, tf;
    for (int i = 0; i < probe; ++i) {
      tb.push_back(bounded.feed(model, {5}, rows));
      tf.push_back(full.feed(model, {5}, rows));
    }
    p.bounded_ms_per_token = median(tb) * 1000;
    p.full_ms_per_token = median(tf) * 1000;
    p.bounded_kv_bytes = std::min(bounded.written, retained) * bytes_per_entry;
    p.full_kv_bytes = full.written * bytes_per_entry;
    p.rss_bytes = current_rss_bytes();
    out.push_back(p);
    report();
  }
  if (progress) progress("stream", total, total);
  return out;
}

Table stream_table(const std::vector<StreamPoint>& points) {
  Table t{{"length", "bounded_ms_per_token", "full_ms_per_token", "bounded_kv_mib", "full_kv_mib", "rss_mib"}, {}};
  for (const auto& p : points)
    t.rows.push_back({p.length, p.bounded_ms_per_token, p.full_ms_per_token,
                      static_cast<double>(p.bounded_kv_bytes) / (1 << 20), static_cast<double>(p.full_kv_bytes) / (1 << 20),
                      static_cast<double>(p.rss_bytes) / (1 << 20)});
  return t;
}

}  // namespace mstar::bench
