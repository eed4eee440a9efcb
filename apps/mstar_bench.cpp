// mstar-bench memory | kernels | matmul | sample | run CONFIG | stream CONFIG | checkpoint FOLDER
//             | tokenize TOKENIZER FILE | soak CONFIG
// Profiles kernels and whole runs against the machine's measured memory
// bandwidth (and the matrix products, alone and in a checkpoint's decode steps,
// against its measured arithmetic peak).
// Reports only: nothing here fails on a time. Tables print as markdown by
// default, --json or --csv on request; --plot FILE.svg draws the kernels'
// bandwidth fractions, the stream comparison or the soak's curves. soak is
// the one that fails (exit 2): on a lost request, a slot not returned, or
// resident memory growing after warm-up (bench/soak.h).
#include <charconv>
#include <fstream>
#include <iostream>

#include <CLI/CLI.hpp>

#include "cli.h"
#include <fmt/format.h>
#include <yaml-cpp/yaml.h>

#include "bench/compute.h"
#include "bench/engine_bench.h"
#include "bench/kernels.h"
#include "bench/matmul.h"
#include "bench/neighbours.h"
#include "bench/sampling.h"
#include "bench/machine.h"
#include "bench/memory.h"
#include "bench/report.h"
#include "bench/soak.h"
#include "bench/svg.h"
#include "config/yaml_read.h"
#include "config/yaml_source.h"
#include "core/checked.h"
#include "core/errors.h"
#include "core/files.h"
#include "resources/options.h"
#include "tokenizer/throughput.h"

using namespace mstar;
using namespace mstar::bench;

namespace {

// "1,4,16": integers in [minimum, 2^30] for `option`; anything else is a
// ConfigError naming the option and the item.
std::vector<int64_t> parse_list(const std::string& s, const char* option, int64_t minimum = 1) {
  std::vector<int64_t> out;
  size_t start = 0;
  while (start <= s.size()) {
    const size_t comma = std::min(s.find(',', start), s.size());
    const std::string item = s.substr(start, comma - start);
    int64_t v = 0;
    const auto [end, ec] = std::from_chars(item.data(), item.data() + item.size(), v);
    if (item.empty() || ec != std::errc() || end != item.data() + item.size() || v < minimum || v > (int64_t{1} << 30))
      throw ConfigError(
          fmt::format("{} '{}': '{}' is not a count in [{}, {}]", option, s, item, minimum, int64_t{1} << 30));
    out.push_back(v);
    start = comma + 1;
  }
  return out;
}

std::vector<KernelShape> read_sweep(const std::string& path) {
  Diagnostics diags;
  auto root = load_yaml_file(path, path, diags);
  if (!root) throw ConfigError(diags.str());
  YamlContext ctx(path, diags);
  std::vector<KernelShape> out;
  auto top = read_map(*root, ctx, "sweep", {"shapes"});
  if (top && top->find("shapes") && top->find("shapes")->IsSequence()) {
    const YAML::Node& list = *top->find("shapes");
    for (size_t i = 0; i < list.size(); ++i) {
      const std::string p = fmt::format("shapes[{}]", i);
      auto e = read_map(list[i], ctx, p,
                        {"kind", "head_dim", "q_heads", "kv_heads", "kv_len", "sink", "q_tokens", "batch", "dtype", "threads"});
      if (!e) continue;
      KernelShape s;
      if (auto* v = e->find("kind")) read_yaml(*v, ctx, p + ".kind", s.kind);
      if (auto* v = e->find("head_dim")) read_yaml(*v, ctx, p + ".head_dim", s.head_dim, Range{1, 1024});
      if (auto* v = e->find("q_heads")) read_yaml(*v, ctx, p + ".q_heads", s.q_heads, Range{1, 1024});
      if (auto* v = e->find("kv_heads")) read_yaml(*v, ctx, p + ".kv_heads", s.kv_heads, Range{1, 1024});
      if (auto* v = e->find("kv_len")) read_yaml(*v, ctx, p + ".kv_len", s.kv_len, Range{1, 1 << 24});
      if (auto* v = e->find("sink")) read_yaml(*v, ctx, p + ".sink", s.sink, Range{0, 1 << 20});
      if (auto* v = e->find("q_tokens")) read_yaml(*v, ctx, p + ".q_tokens", s.q_tokens, Range{1, 4096});
      if (auto* v = e->find("batch")) read_yaml(*v, ctx, p + ".batch", s.batch, Range{1, 4096});
      if (auto* v = e->find("dtype")) read_yaml(*v, ctx, p + ".dtype", s.dtype);
      int64_t t = s.threads;
      if (auto* v = e->find("threads")) read_yaml(*v, ctx, p + ".threads", t, Range{1, 1024});
      s.threads = static_cast<int>(t);
      out.push_back(s);
    }
  } else if (top) {
    ctx.error(*root, "sweep: expected 'shapes:' with a list of shapes");
  }
  if (!diags.ok()) throw ConfigError(diags.str());
  return out;
}

void write_file(const std::string& path, const std::string& text) {
  OutputFile out{std::filesystem::path(path)};
  out.write(text);
  out.close();
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"Benchmark mstar's kernels and engine against the machine's limits"};
  app.require_subcommand(1);
  app.fallthrough();  // --json, --csv and --plot may follow the subcommand
  bool as_json = false, as_csv = false;
  std::string plot;
  app.add_flag("--json", as_json, "print JSON");
  app.add_flag("--csv", as_csv, "print CSV");
  app.add_option("--plot", plot, "write an SVG chart (kernels: bandwidth fractions; stream: the comparison)");

  int threads = 2, repeats = 5;
  int64_t mib = 512;
  std::string memory_backend = "cpu";
  auto* memory = app.add_subcommand("memory", "STREAM-style copy and triad bandwidth and a read, all threads (or the GPU's copy and triad)");
  memory->add_option("--threads", threads, "threads")->check(CLI::Range(1, 1024));
  memory->add_option("--mib", mib, "MiB per array (far beyond the caches)")->check(CLI::PositiveNumber);
  memory->add_option("--repeats", repeats, "repeats")->check(CLI::PositiveNumber);
  memory->add_option("--backend", memory_backend, "cpu (host memory) or cuda (the GPU's memory)")
      ->check(CLI::IsMember({"cpu", "cuda"}));

  KernelShape shape;
  std::string dtype = "bf16", backends = "all", cache = "both", sweep;
  int kthreads = 2, krepeats = 20;
  double bw = 0;
  auto* kern = app.add_subcommand("kernels", "bounded (decode, chunk) and ring attention, per backend, hot and cold");
  kern->add_option("--kind", shape.kind, "decode, chunk or ring")->check(CLI::IsMember({"decode", "chunk", "ring"}));
  kern->add_option("--head-dim", shape.head_dim, "head dim")->check(CLI::PositiveNumber);
  kern->add_option("--q-heads", shape.q_heads, "query heads")->check(CLI::PositiveNumber);
  kern->add_option("--kv-heads", shape.kv_heads, "KV heads")->check(CLI::PositiveNumber);
  kern->add_option("--kv-len,--window", shape.kv_len, "window entries per row (ring: frames x tokens per frame)")->check(CLI::PositiveNumber);
  kern->add_option("--sink", shape.sink, "sink entries per row, read before the window (bounded)")->check(CLI::NonNegativeNumber);
  kern->add_option("--q-tokens", shape.q_tokens, "query tokens per row (ring: tokens per frame)")->check(CLI::PositiveNumber);
  kern->add_option("--batch", shape.batch, "rows")->check(CLI::PositiveNumber);
  kern->add_option("--dtype", dtype, "KV dtype")->check(CLI::IsMember({"f32", "f16", "bf16"}));
  kern->add_option("--threads", kthreads, "threads")->check(CLI::Range(1, 1024));
  kern->add_option("--repeats", krepeats, "timed calls per row")->check(CLI::PositiveNumber);
  kern->add_option("--backend", backends, "all (every backend this machine runs), reference, cpu or cuda")
      ->check(CLI::IsMember({"all", "reference", "cpu", "cuda"}));
  kern->add_option("--cache", cache, "hot, cold or both")->check(CLI::IsMember({"hot", "cold", "both"}));
  kern->add_option("--sweep", sweep, "YAML file of shapes (shapes: [{kind, head_dim, ...}])");
  kern->add_option("--bandwidth", bw, "GB/s to compare with (default: measure it now)");

  int neighbours = 0;
  const char* neighbours_help = "busy-looping processes running beside the timed calls (a shared machine)";
  kern->add_option("--neighbours", neighbours, neighbours_help)->check(CLI::Range(0, 1024));

  MatmulShape mshape;
  std::string mrows = "1,4,16,64,512", mdtype = "bf16";
  int mrepeats = 20;
  auto* mm = app.add_subcommand("matmul", "the trunk's matrix product by each cpu path, hot and cold, beside the measured bandwidth and arithmetic peak");
  mm->add_option("--rows", mrows, "rows (tokens) per product, comma-separated");
  mm->add_option("--in", mshape.in, "input width")->check(CLI::Range(int64_t{1}, int64_t{1} << 20));
  mm->add_option("--out", mshape.out, "output width")->check(CLI::Range(int64_t{1}, int64_t{1} << 22));
  mm->add_option("--dtype", mdtype, "weight dtype")->check(CLI::IsMember({"f32", "f16", "bf16"}));
  mm->add_option("--threads", mshape.threads, "threads")->check(CLI::Range(1, 1024));
  mm->add_option("--repeats", mrepeats, "timed calls")->check(CLI::Range(1, 100000));
  mm->add_option("--cache", cache, "hot, cold or both")->check(CLI::IsMember({"hot", "cold", "both"}));
  mm->add_option("--bandwidth", bw, "GB/s to compare with (default: measure it now)");
  mm->add_option("--neighbours", neighbours, neighbours_help)->check(CLI::Range(0, 1024));

  int64_t vocab = 151936;
  int srepeats = 200;
  auto* samp = app.add_subcommand("sample", "turning one step's logits into a token, per sampling setting");
  samp->add_option("--vocab", vocab, "vocabulary size")->check(CLI::Range(int64_t{1}, int64_t{1} << 24));
  samp->add_option("--repeats", srepeats, "timed draws")->check(CLI::Range(1, 1000000));

  std::string config;
  std::vector<std::string> sets;
  std::string streams = "1,4,16,32", lengths = "1024,2048,4096,8192,16384,32768,65536";
  int64_t tokens = 64;
  int probe = 8, rrepeats = 3;
  auto* run = app.add_subcommand("run", "a deployment's workload, repeated; then the concurrency sweep");
  run->add_option("config", config, "deployment YAML")->required();
  run->add_option("--set", sets, "dotted.key=value overrides");
  run->add_option("--repeats", rrepeats, "runs of the workload")->check(CLI::PositiveNumber);
  run->add_option("--streams", streams, "concurrent streams to sweep, comma-separated");
  run->add_option("--tokens", tokens, "tokens (or frames) per stream in the sweep")->check(CLI::PositiveNumber);
  int rrounds = 1;
  run->add_option("--rounds", rrounds, "rounds of the sweep, every count in each round in turn")->check(CLI::Range(1, 1000));
  std::string folder, cbackend = "cpu", depths, ckv = "bf16", cact = "f32";
  CheckpointOptions copt;
  std::string cstreams = "1,4,16";
  auto* ckpt = app.add_subcommand("checkpoint", "a Hugging Face checkpoint folder as a speech model: load, memory, "
                                                "aggregate decode, its products alone, decode at depths, prefill");
  ckpt->add_option("folder", folder, "checkpoint folder (config.json, safetensors)")->required();
  ckpt->add_option("--kind", copt.kind, "family: llama or qwen2")->check(CLI::IsMember({"llama", "qwen2"}));
  ckpt->add_option("--backend", cbackend, "reference, cpu or cuda")->check(CLI::IsMember({"reference", "cpu", "cuda"}));
  ckpt->add_option("--threads", copt.threads, "threads")->check(CLI::Range(1, 1024));
  ckpt->add_option("--streams", cstreams, "concurrent streams to sweep, comma-separated (empty: no sweep)");
  ckpt->add_option("--tokens", copt.tokens, "tokens each stream decodes")->check(CLI::Range(1, 1 << 20));
  ckpt->add_option("--rounds", copt.rounds, "rounds of the sweep, every count in each round in turn")
      ->check(CLI::Range(1, 1000));
  ckpt->add_option("--window", copt.window, "the bounded cache's window")->check(CLI::Range(1, 1 << 20));
  ckpt->add_option("--depths", depths, "single-stream decode at these stream lengths, comma-separated");
  ckpt->add_option("--probe", copt.probe, "decode steps timed at each depth")->check(CLI::Range(1, 100000));
  ckpt->add_option("--prefill", copt.prefill, "time one prompt of this many tokens")->check(CLI::Range(0, 1 << 20));
  ckpt->add_option("--products", copt.products,
                   "time a decode step's matrix products alone, cold, at this many rows (streams), and their sum "
                   "over the sweep's step when --streams has that count; 0: not")
      ->check(CLI::Range(0, 4096));
  ckpt->add_option("--roofline", copt.roofline,
                   "one-stream decode steps at the deployment's threads and at one, each pair beside a read of memory "
                   "the moment before: this many pairs; 0: not")
      ->check(CLI::Range(0, 100000));
  ckpt->add_option("--neighbours", copt.neighbours, "busy-looping processes running beside the --streams sweep and the --roofline pairs")
      ->check(CLI::Range(0, 1024));
  ckpt->add_option("--kv-dtype", ckv, "the cache's dtype")->check(CLI::IsMember({"f32", "f16", "bf16"}));
  ckpt->add_option("--activations", cact, "what the matrix products round activations to (the deployment's key)")
      ->check(CLI::IsMember({"f32", "bf16"}));
  std::string tokenizer_path, text_file;
  int tpasses = 5;
  auto* tokenize = app.add_subcommand("tokenize", "encode throughput of a tokenizer.json over a text file, one thread");
  tokenize->add_option("tokenizer", tokenizer_path, "tokenizer.json, or a folder holding it")->required();
  tokenize->add_option("file", text_file, "text to encode")->required();
  tokenize->add_option("--passes", tpasses, "timed passes")->check(CLI::Range(1, 1000));
  auto* stream = app.add_subcommand("stream", "one stream of growing length: bounded against full-history cache");
  stream->add_option("config", config, "tts deployment YAML")->required();
  stream->add_option("--set", sets, "dotted.key=value overrides");
  stream->add_option("--lengths", lengths, "stream lengths, comma-separated");
  stream->add_option("--probe", probe, "decode steps timed at each length")->check(CLI::PositiveNumber);

  SoakOptions soak_options;
  std::string soak_csv_path;
  auto* soak_cmd = app.add_subcommand("soak", "a deployment under random traffic for minutes: fails on a lost request, "
                                              "a slot not returned or resident memory growing after warm-up");
  soak_cmd->add_option("config", config, "deployment YAML")->required();
  soak_cmd->add_option("--set", sets, "dotted.key=value overrides");
  soak_cmd->add_option("--minutes", soak_options.minutes, "how long to run")->check(CLI::Range(0.05, 10000.0));
  soak_cmd->add_option("--warmup-minutes", soak_options.warmup_minutes, "warm-up before memory must stay flat (at most a fifth of the run)")
      ->check(CLI::Range(0.0, 10000.0));
  soak_cmd->add_option("--seed", soak_options.seed, "seed of the random traffic");
  soak_cmd->add_option("--samples", soak_csv_path, "write the per-second samples here as CSV");

  if (auto rc = mstar::cli::parse(app, argc, argv)) return *rc;
  const Format fmt_out = as_json ? Format::json : as_csv ? Format::csv : Format::markdown;
  return mstar::cli::guarded("mstar-bench", [&] {
    const Machine m = machine();
    if (fmt_out == Format::markdown) fmt::print("machine: {}\n\n", to_string(m));
    if (*memory) {
      // Three arrays of --mib each, checked before they are allocated (the
      // GPU's allocator refuses what its memory cannot hold).
      const auto bytes = checked_product({3, mib, int64_t{1} << 20});
      check_fits_memory(fmt::format("--mib {} (three arrays)", mib), bytes.value_or(UINT64_MAX),
                        memory_backend == "cuda" ? Backend::cuda : Backend::cpu);
    }
    if (*memory && memory_backend == "cuda") {
      const DeviceBandwidth b = measure_device_bandwidth(mib << 20, repeats);
      Table t{{"device", "array_mib", "copy_gbs", "triad_gbs", "copy_median_gbs", "triad_median_gbs"},
              {{b.device, b.array_bytes >> 20, b.copy_gbs, b.triad_gbs, b.copy_median_gbs, b.triad_median_gbs}}};
      std::cout << render(t, fmt_out);
    } else if (*memory) {
      const Bandwidth b = measure_bandwidth(threads, mib << 20, repeats);
      Table t{{"threads", "array_mib", "copy_gbs", "triad_gbs", "read_gbs", "read4_gbs", "copy_median_gbs",
               "triad_median_gbs", "read_median_gbs", "read4_median_gbs"},
              {{b.threads, b.array_bytes >> 20, b.copy_gbs, b.triad_gbs, b.read_gbs, b.read4_gbs, b.copy_median_gbs,
                b.triad_median_gbs, b.read_median_gbs, b.read4_median_gbs}}};
      std::cout << render(t, fmt_out);
    } else if (*kern) {
      shape.dtype = parse_dtype(dtype, "--dtype");
      shape.threads = kthreads;
      if (shape.kind == "decode") shape.q_tokens = kern->count("--q-tokens") ? shape.q_tokens : 1;
      if (shape.kind == "chunk" && !kern->count("--q-tokens")) shape.q_tokens = 64;
      if (shape.kind == "ring" && !kern->count("--q-tokens")) shape.q_tokens = 256;
      // Each row is set against its own memory: --bandwidth when given, else
      // the measured triad of the host (reference, cpu) or of the GPU (cuda),
      // each measured once, when first needed.
      double host_bw = bw, device_bw = bw;
      std::string device_name;
      auto bandwidth_for = [&](Backend b) {
        if (b == Backend::cuda) {
          if (device_bw <= 0) {
            const DeviceBandwidth d = measure_device_bandwidth(512 << 20, 5);
            device_bw = d.triad_gbs;
            device_name = d.device;
          }
          return device_bw;
        }
        if (host_bw <= 0) host_bw = measure_bandwidth(kthreads, 512 << 20, 5).triad_gbs;
        return host_bw;
      };
      const std::vector<KernelShape> shapes = sweep.empty() ? std::vector<KernelShape>{shape} : read_sweep(sweep);
      Table t{{"kind", "backend", "cache", "dtype", "head_dim", "q_heads", "kv_heads", "sink", "kv_len", "q_tokens", "batch",
               "threads", "median_us", "min_us", "max_us", "kv_mib", "gbs", "of_bandwidth", "gflops"},
              {}};
      std::vector<Bar> bars;
      for (const KernelShape& s : shapes)
        for (Backend b : {Backend::cuda, Backend::cpu, Backend::reference}) {
          if (backends != "all" && backends != to_string(b)) continue;
          std::string why;
          if (!backend_available(b, &why)) {
            if (backends == "all") continue;
            throw ConfigError(fmt::format("--backend {}: {}", backends, why));
          }
          for (bool cold : {false, true}) {
            if ((cold && cache == "hot") || (!cold && cache == "cold")) continue;
            const double of = bandwidth_for(b);
            const int reps = b == Backend::reference ? std::min(krepeats, 3) : krepeats;
            const KernelResult r = [&] {
              const Neighbours busy(neighbours);  // beside the timed calls only, not the bandwidth
              return bench_kernel(s, b, cold, reps, m.llc_bytes);
            }();
            t.rows.push_back({s.kind, std::string(to_string(b)), cold ? "cold" : "hot", std::string(to_string(s.dtype)),
                              s.head_dim, s.q_heads, s.kv_heads, s.sink, s.kv_len, s.q_tokens, s.batch, s.threads, r.median_us,
                              r.min_us, r.max_us, static_cast<double>(r.kv_bytes) / (1 << 20), r.gbs, r.gbs / of, r.gflops});
            bars.push_back({fmt::format("{} {} {} {} b{} {}", s.kind, to_string(b), cold ? "cold" : "hot",
                                        to_string(s.dtype), s.batch, s.kv_len),
                            r.gbs / of});
          }
        }
      if (fmt_out == Format::markdown) {
        if (bw > 0) fmt::print("bandwidth (given): {:.1f} GB/s\n", bw);
        if (bw <= 0 && host_bw > 0) fmt::print("measured bandwidth (triad, {} threads): {:.1f} GB/s\n", kthreads, host_bw);
        if (neighbours > 0) fmt::print("timed beside {} busy-looping processes\n", neighbours);
        if (bw <= 0 && device_bw > 0) fmt::print("measured device bandwidth (triad, {}): {:.1f} GB/s\n", device_name, device_bw);
        fmt::print("\n");
      }
      std::cout << render(t, fmt_out);
      if (!plot.empty()) {
        std::string against;
        if (bw > 0) against = fmt::format("{:.1f} GB/s", bw);
        if (bw <= 0 && host_bw > 0) against = fmt::format("host triad {:.1f} GB/s", host_bw);
        if (bw <= 0 && device_bw > 0)
          against += fmt::format("{}device triad {:.1f} GB/s", against.empty() ? "" : ", ", device_bw);
        write_file(plot, bar_chart(fmt::format("KV read bandwidth / measured bandwidth ({})", against),
                                   "fraction of the memory bandwidth", bars));
      }
    } else if (*mm) {
      mshape.dtype = parse_dtype(mdtype, "--dtype");
      const std::vector<int64_t> row_counts = parse_list(mrows, "--rows");
      const auto timed = [&](bool cold) { return cache == "both" || (cache == "cold") == cold; };
      for (int64_t rows : row_counts)  // every shape refused before anything is measured
        for (bool cold : {false, true})
          if (timed(cold))
            check_matmul_shape({rows, mshape.in, mshape.out, mshape.dtype, mshape.threads}, cold, m.llc_bytes,
                               matmul_methods());
      if (bw <= 0) bw = measure_bandwidth(mshape.threads, 512 << 20, 5).triad_gbs;
      const ComputePeak peak = measure_compute_peak(mshape.threads, 5);
      Table t{{"method", "cache", "dtype", "rows", "in", "out", "threads", "median_us", "min_us", "weight_gbs",
               "of_bandwidth", "gflops", "of_peak"},
              {}};
      const Neighbours busy(neighbours);
      for (int64_t rows : row_counts) {
        mshape.rows = rows;
        for (bool cold : {false, true}) {
          if (!timed(cold)) continue;
          for (const MatmulResult& r : bench_matmul(mshape, cold, mrepeats, m.llc_bytes, matmul_methods()))
            t.rows.push_back({r.method, cold ? "cold" : "hot", std::string(to_string(mshape.dtype)), rows, mshape.in,
                              mshape.out, mshape.threads, r.median_us, r.min_us, r.weight_gbs, r.weight_gbs / bw, r.gflops,
                              r.gflops / peak_gflops(peak, r.peak_op)});
        }
      }
      if (fmt_out == Format::markdown) {
        fmt::print("measured bandwidth (triad, {} threads): {:.1f} GB/s\n", mshape.threads, bw);
        fmt::print("measured peak ({} body, {} threads): f32 FMA {:.1f} GFLOP/s (median {:.1f})", peak.isa, peak.threads,
                   peak.fma_gflops, peak.fma_median_gflops);
        if (peak.bf16_dot_gflops > 0)
          fmt::print(", vdpbf16ps {:.1f} (median {:.1f})", peak.bf16_dot_gflops, peak.bf16_dot_median_gflops);
        if (peak.tiles_gflops > 0)
          fmt::print(", tdpbf16ps {:.1f} (median {:.1f})", peak.tiles_gflops, peak.tiles_median_gflops);
        fmt::print("\n");
        if (neighbours > 0) fmt::print("timed beside {} busy-looping processes\n", neighbours);
        fmt::print("\n");
      }
      std::cout << render(t, fmt_out);
    } else if (*samp) {
      Table t{{"setting", "vocab", "median_us", "max_us"}, {}};
      for (const SamplingResult& r : bench_sampling(vocab, srepeats))
        t.rows.push_back({r.setting, r.vocab, r.median_us, r.max_us});
      std::cout << render(t, fmt_out);
    } else if (*run) {
      const std::vector<int64_t> stream_counts = parse_list(streams, "--streams");  // refused before anything runs
      const ResolvedDeployment d = resolve_or_throw(config, sets);
      const ConcurrencySweep concurrency = resolve_concurrency(config, sets, stream_counts, tokens);
      std::cout << render(bench_run(d, rrepeats), fmt_out);
      if (fmt_out == Format::markdown) std::cout << "\n";
      std::cout << render(bench_concurrency(concurrency, rrounds), fmt_out);
    } else if (*tokenize) {
      const std::string text = read_file(text_file, std::size_t{1} << 30, text_file);
      const EncodeThroughput r = measure_encode(Tokenizer::from_file(tokenizer_path), text, tpasses, true);
      std::cout << render(Table{{"bytes", "tokens", "median_ms", "mb_per_s"},
                                {{static_cast<int64_t>(r.bytes), static_cast<int64_t>(r.tokens), r.median_s * 1e3,
                                  r.mb_per_s()}}},
                          fmt_out);
    } else if (*ckpt) {
      copt.backend = parse_backend(cbackend, "--backend");
      copt.kv_dtype = parse_dtype(ckv, "--kv-dtype");
      copt.activations = parse_dtype(cact, "--activations");
      copt.streams = cstreams.empty() ? std::vector<int64_t>{} : parse_list(cstreams, "--streams");
      if (!depths.empty()) copt.depths = parse_list(depths, "--depths", 0);  // 0: a fresh stream
      const CheckpointBench b = bench_checkpoint(folder, copt);
      for (const Table* t : {&b.load, &b.sweep, &b.products, &b.depths, &b.prefill, &b.roofline}) {
        if (t->rows.empty()) continue;
        if (t != &b.load && fmt_out == Format::markdown) std::cout << "\n";
        std::cout << render(*t, fmt_out);
      }
    } else if (*soak_cmd) {
      const ResolvedDeployment d = resolve_or_throw(config, sets);
      const SoakResult r = soak(d, soak_options);
      std::cout << render(soak_table(r, soak_options), fmt_out);
      if (!soak_csv_path.empty()) write_file(soak_csv_path, soak_csv(r));
      if (!plot.empty()) write_file(plot, soak_svg(r, std::filesystem::path(config).filename().string()));
      if (!r.problems.empty()) {
        for (const std::string& p : r.problems) fmt::print(stderr, "mstar-bench soak: {}\n", p);
        fmt::print(stderr, "mstar-bench soak: FAILED\n");
        return mstar::cli::kInternal;
      }
    } else if (*stream) {
      const ResolvedDeployment d = resolve_or_throw(config, sets);
      const auto points = bench_stream(d, parse_list(lengths, "--lengths"), probe);
      std::cout << render(stream_table(points), fmt_out);
      if (!plot.empty()) {
        Series bt{"bounded (sink + window)", "#2a7", {}, {}}, ft{"full history", "#c33", {}, {}};
        Series bm{"bounded (sink + window)", "#2a7", {}, {}}, fm{"full history", "#c33", {}, {}};
        for (const auto& p : points) {
          const auto L = static_cast<double>(p.length);
          bt.x.push_back(L), bt.y.push_back(p.bounded_ms_per_token);
          ft.x.push_back(L), ft.y.push_back(p.full_ms_per_token);
          bm.x.push_back(L), bm.y.push_back(static_cast<double>(p.bounded_kv_bytes) / (1 << 20));
          fm.x.push_back(L), fm.y.push_back(static_cast<double>(p.full_kv_bytes) / (1 << 20));
        }
        write_file(plot, side_by_side(line_chart("time per token", "stream length (tokens)", "ms", {bt, ft}, true),
                                      line_chart("KV held", "stream length (tokens)", "MiB", {bm, fm}, true)));
      }
    }
    return mstar::cli::kOk;
  });
}
