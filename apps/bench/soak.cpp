// mstar-bench soak CONFIG: a deployment under random traffic for minutes
// (bench/soak.h); the one subcommand that fails (exit 2): on a lost request,
// a slot not returned or resident memory growing after warm-up.
#include <filesystem>
#include <iostream>
#include <memory>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "../cli.h"
#include "bench/engine_bench.h"
#include "bench/soak.h"
#include "subcommand.h"

namespace mstar::bench::command {

namespace {

struct SoakArgs {
  DeploymentArgs deployment;
  SoakOptions options;
  std::string samples;  // --samples: the CSV's file, empty for none
};

int run_soak(const SoakArgs& a, const Context& c) {
  const ResolvedDeployment d = resolve_or_throw(a.deployment.config, a.deployment.sets);
  const SoakResult r = soak(d, a.options);
  std::cout << render(soak_table(r, a.options), c.format);
  if (!a.samples.empty()) write_file(a.samples, soak_csv(r));
  if (!c.plot.empty()) write_file(c.plot, soak_svg(r, std::filesystem::path(a.deployment.config).filename().string()));
  if (!r.problems.empty()) {
    for (const std::string& p : r.problems) fmt::print(stderr, "mstar-bench soak: {}\n", p);
    fmt::print(stderr, "mstar-bench soak: FAILED\n");
    return mstar::cli::kInternal;
  }
  return mstar::cli::kOk;
}

}  // namespace

void add_soak(CLI::App& app, Subcommands& out) {
  auto [soak_cmd, a] = add_subcommand(app, out, "soak",
                                      "a deployment under random traffic for minutes: fails on a lost request, "
                                      "a slot not returned or resident memory growing after warm-up",
                                      run_soak, Plot::drawn);
  SoakOptions& soak_options = a->options;
  add_deployment(*soak_cmd, a->deployment, "deployment YAML");
  soak_cmd->add_option("--minutes", soak_options.minutes, "how long to run")->check(CLI::Range(0.05, 10000.0));
  soak_cmd->add_option("--warmup-minutes", soak_options.warmup_minutes, "warm-up before memory must stay flat (at most a fifth of the run)")
      ->check(CLI::Range(0.0, 10000.0));
  soak_cmd->add_option("--seed", soak_options.seed, "seed of the random traffic");
  soak_cmd->add_option("--samples", a->samples, "write the per-second samples here as CSV");
}

}  // namespace mstar::bench::command
