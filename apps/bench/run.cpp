// mstar-bench run CONFIG: a deployment's workload, repeated; then the
// concurrency sweep (bench/engine_bench.h).
#include <cstdint>
#include <iostream>
#include <memory>
#include <string>
#include <vector>

#include "../cli.h"
#include "bench/engine_bench.h"
#include "subcommand.h"

namespace mstar::bench::command {

namespace {

struct RunOptions {
  DeploymentArgs deployment;
  std::string streams = "1,4,16,32";
  int64_t tokens = 64;
  int repeats = 3, rounds = 1;
};

int run_run(const RunOptions& o, const Context& c) {
  const std::vector<int64_t> stream_counts = parse_list(o.streams, "--streams");  // refused before anything runs
  const DeploymentArgs& a = o.deployment;
  const ResolvedDeployment d = resolve_or_throw(a.config, a.sets);
  const ConcurrencySweep concurrency = resolve_concurrency(a.config, a.sets, stream_counts, o.tokens);
  std::cout << render(bench_run(d, o.repeats), c.format);
  if (c.format == Format::markdown) std::cout << "\n";
  std::cout << render(bench_concurrency(concurrency, o.rounds), c.format);
  return mstar::cli::kOk;
}

}  // namespace

void add_run(CLI::App& app, Subcommands& out) {
  auto [run, o] = add_subcommand(app, out, "run", "a deployment's workload, repeated; then the concurrency sweep", run_run);
  add_deployment(*run, o->deployment, "deployment YAML");
  run->add_option("--repeats", o->repeats, "runs of the workload")->check(CLI::PositiveNumber);
  run->add_option("--streams", o->streams, "concurrent streams to sweep, comma-separated");
  run->add_option("--tokens", o->tokens, "tokens (or frames) per stream in the sweep")->check(CLI::PositiveNumber);
  run->add_option("--rounds", o->rounds, "rounds of the sweep, every count in each round in turn")->check(CLI::Range(1, 1000));
}

}  // namespace mstar::bench::command
