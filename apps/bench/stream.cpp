// mstar-bench stream CONFIG: one stream of growing length, the bounded
// cache against the full history (bench/engine_bench.h); --plot draws the
// time per token and the KV held, side by side.
#include <iostream>
#include <memory>
#include <string>
#include <vector>

#include "../cli.h"
#include "bench/engine_bench.h"
#include "bench/svg.h"
#include "subcommand.h"

namespace mstar::bench::command {

namespace {

struct StreamOptions {
  DeploymentArgs deployment;
  std::string lengths = "1024,2048,4096,8192,16384,32768,65536";
  int probe = 8;
};

int run_stream(const StreamOptions& o, const Context& c) {
  const ResolvedDeployment d = resolve_or_throw(o.deployment.config, o.deployment.sets);
  const auto points = bench_stream(d, parse_list(o.lengths, "--lengths"), o.probe, c.progress);
  std::cout << render(stream_table(points), c.format);
  if (!c.plot.empty()) {
    Series bt{"bounded (sink + window)", "#2a7", {}, {}}, ft{"full history", "#c33", {}, {}};
    Series bm{"bounded (sink + window)", "#2a7", {}, {}}, fm{"full history", "#c33", {}, {}};
    for (const auto& p : points) {
      const auto L = static_cast<double>(p.length);
      bt.x.push_back(L), bt.y.push_back(p.bounded_ms_per_token);
      ft.x.push_back(L), ft.y.push_back(p.full_ms_per_token);
      bm.x.push_back(L), bm.y.push_back(static_cast<double>(p.bounded_kv_bytes) / (1 << 20));
      fm.x.push_back(L), fm.y.push_back(static_cast<double>(p.full_kv_bytes) / (1 << 20));
    }
    write_file(c.plot, side_by_side(line_chart("time per token", "stream length (tokens)", "ms", {bt, ft}, true),
                                    line_chart("KV held", "stream length (tokens)", "MiB", {bm, fm}, true)));
  }
  return mstar::cli::kOk;
}

}  // namespace

void add_stream(CLI::App& app, Subcommands& out) {
  auto [stream, o] = add_subcommand(app, out, "stream", "one stream of growing length: bounded against full-history cache",
                                    run_stream, Plot::drawn);
  add_deployment(*stream, o->deployment, "tts deployment YAML");
  stream->add_option("--lengths", o->lengths, "stream lengths, comma-separated");
  stream->add_option("--probe", o->probe, "decode steps timed at each length")->check(CLI::PositiveNumber);
}

}  // namespace mstar::bench::command
