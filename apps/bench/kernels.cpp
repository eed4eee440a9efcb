// mstar-bench kernels: bounded (decode, chunk) and ring attention, per
// backend, hot and cold, against the memory's measured bandwidth; --sweep
// reads the shapes from a YAML file, --plot draws the bandwidth fractions.
#include <algorithm>
#include <iostream>
#include <memory>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <yaml-cpp/yaml.h>

#include "../cli.h"
#include "bench/kernels.h"
#include "bench/memory.h"
#include "bench/neighbours.h"
#include "bench/svg.h"
#include "config/yaml_read.h"
#include "config/yaml_source.h"
#include "core/errors.h"
#include "subcommand.h"

namespace mstar::bench::command {

namespace {

// The sizes a shape may take, on the command line and in a sweep file alike:
// the largest ones a 24 GiB machine times in seconds, not an allocation
// that cannot fit.
constexpr Range kHeadDim{1, 1024}, kHeads{1, 1024}, kKvLen{1, 1 << 24}, kSink{0, 1 << 20}, kQTokens{1, 4096},
    kBatch{1, 4096};

CLI::Range cli_range(Range r) { return CLI::Range(r.min, r.max); }

struct KernelsOptions {
  KernelShape shape;
  std::string dtype = "bf16", backends = "all", cache = "both", sweep;
  int threads = 2, repeats = 20;
  double bandwidth = 0;
  int neighbours = 0;
  const CLI::Option* q_tokens = nullptr;  // --q-tokens, to tell whether it was given
};

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
      if (auto* v = e->find("head_dim")) read_yaml(*v, ctx, p + ".head_dim", s.head_dim, kHeadDim);
      if (auto* v = e->find("q_heads")) read_yaml(*v, ctx, p + ".q_heads", s.q_heads, kHeads);
      if (auto* v = e->find("kv_heads")) read_yaml(*v, ctx, p + ".kv_heads", s.kv_heads, kHeads);
      if (auto* v = e->find("kv_len")) read_yaml(*v, ctx, p + ".kv_len", s.kv_len, kKvLen);
      if (auto* v = e->find("sink")) read_yaml(*v, ctx, p + ".sink", s.sink, kSink);
      if (auto* v = e->find("q_tokens")) read_yaml(*v, ctx, p + ".q_tokens", s.q_tokens, kQTokens);
      if (auto* v = e->find("batch")) read_yaml(*v, ctx, p + ".batch", s.batch, kBatch);
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

int run_kernels(const KernelsOptions& o, const Context& c) {
  const Format fmt_out = c.format;
  const double bw = o.bandwidth;
  const int kthreads = o.threads;
  KernelShape shape = o.shape;
  shape.dtype = parse_dtype(o.dtype, "--dtype");
  shape.threads = kthreads;
  if (shape.kind == "decode") shape.q_tokens = o.q_tokens->count() ? shape.q_tokens : 1;
  if (shape.kind == "chunk" && !o.q_tokens->count()) shape.q_tokens = 64;
  if (shape.kind == "ring" && !o.q_tokens->count()) shape.q_tokens = 256;
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
  const std::vector<KernelShape> shapes = o.sweep.empty() ? std::vector<KernelShape>{shape} : read_sweep(o.sweep);
  Table t{{"kind", "backend", "cache", "dtype", "head_dim", "q_heads", "kv_heads", "sink", "kv_len", "q_tokens", "batch",
           "threads", "median_us", "min_us", "max_us", "kv_mib", "gbs", "of_bandwidth", "gflops"},
          {}};
  std::vector<Bar> bars;
  for (const KernelShape& s : shapes)
    for (Backend b : {Backend::cuda, Backend::cpu, Backend::reference}) {
      if (o.backends != "all" && o.backends != to_string(b)) continue;
      std::string why;
      if (!backend_available(b, &why)) {
        if (o.backends == "all") continue;
        throw ConfigError(fmt::format("--backend {}: {}", o.backends, why));
      }
      for (bool cold : {false, true}) {
        if ((cold && o.cache == "hot") || (!cold && o.cache == "cold")) continue;
        const double of = bandwidth_for(b);
        const int reps = b == Backend::reference ? std::min(o.repeats, 3) : o.repeats;
        const KernelResult r = [&] {
          const Neighbours busy(o.neighbours);  // beside the timed calls only, not the bandwidth
          return bench_kernel(s, b, cold, reps, c.machine.llc_bytes);
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
    if (o.neighbours > 0) fmt::print("timed beside {} busy-looping processes\n", o.neighbours);
    if (bw <= 0 && device_bw > 0) fmt::print("measured device bandwidth (triad, {}): {:.1f} GB/s\n", device_name, device_bw);
    fmt::print("\n");
  }
  std::cout << render(t, fmt_out);
  if (!c.plot.empty()) {
    std::string against;
    if (bw > 0) against = fmt::format("{:.1f} GB/s", bw);
    if (bw <= 0 && host_bw > 0) against = fmt::format("host triad {:.1f} GB/s", host_bw);
    if (bw <= 0 && device_bw > 0)
      against += fmt::format("{}device triad {:.1f} GB/s", against.empty() ? "" : ", ", device_bw);
    write_file(c.plot, bar_chart(fmt::format("KV read bandwidth / measured bandwidth ({})", against),
                                 "fraction of the memory bandwidth", bars));
  }
  return mstar::cli::kOk;
}

}  // namespace

void add_kernels(CLI::App& app, Subcommands& out) {
  auto [kern, o] = add_subcommand(app, out, "kernels",
                                  "bounded (decode, chunk) and ring attention, per backend, hot and cold", run_kernels,
                                  Plot::drawn);
  KernelShape& shape = o->shape;
  kern->add_option("--kind", shape.kind, "decode, chunk or ring")->check(CLI::IsMember({"decode", "chunk", "ring"}));
  kern->add_option("--head-dim", shape.head_dim, "head dim")->check(cli_range(kHeadDim));
  kern->add_option("--q-heads", shape.q_heads, "query heads")->check(cli_range(kHeads));
  kern->add_option("--kv-heads", shape.kv_heads, "KV heads")->check(cli_range(kHeads));
  kern->add_option("--kv-len,--window", shape.kv_len, "window entries per row (ring: frames x tokens per frame)")
      ->check(cli_range(kKvLen));
  kern->add_option("--sink", shape.sink, "sink entries per row, read before the window (bounded)")->check(cli_range(kSink));
  o->q_tokens = kern->add_option("--q-tokens", shape.q_tokens, "query tokens per row (ring: tokens per frame)")
                    ->check(cli_range(kQTokens));
  kern->add_option("--batch", shape.batch, "rows")->check(cli_range(kBatch));
  kern->add_option("--dtype", o->dtype, "KV dtype")->check(CLI::IsMember({"f32", "f16", "bf16"}));
  kern->add_option("--threads", o->threads, "threads")->check(CLI::Range(1, 1024));
  kern->add_option("--repeats", o->repeats, "timed calls per row")->check(CLI::PositiveNumber);
  kern->add_option("--backend", o->backends, "all (every backend this machine runs), reference, cpu or cuda")
      ->check(CLI::IsMember({"all", "reference", "cpu", "cuda"}));
  kern->add_option("--cache", o->cache, "hot, cold or both")->check(CLI::IsMember({"hot", "cold", "both"}));
  kern->add_option("--sweep", o->sweep, "YAML file of shapes (shapes: [{kind, head_dim, ...}])");
  kern->add_option("--bandwidth", o->bandwidth, "GB/s to compare with (default: measure it now)");
  kern->add_option("--neighbours", o->neighbours, kNeighboursHelp)->check(CLI::Range(0, 1024));
}

}  // namespace mstar::bench::command
