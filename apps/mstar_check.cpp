// mstar-check CONFIG... | --model PATH [--set dotted.key=value]... [--json]
// Validates deployments and their model manifests before anything is
// allocated, exactly as mstar-run loads them, and prints the memory plan.
// Exit 0 when every config is valid, 1 when any file has errors (all of them
// are printed, with their places), 2 for a usage error.
#include <iostream>

#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include "cli.h"
#include "core/json_text.h"
#include "config/memory_plan.h"
#include "engine/program.h"

int main(int argc, char** argv) {
  CLI::App app{"Validate mstar deployments and print their memory plan"};
  std::vector<std::string> configs, sets;
  std::string model;
  bool json = false;
  auto* files = app.add_option("configs", configs, "deployment YAML files");
  app.add_option("--model", model,
                 "instead of deployments: a checkpoint folder, a GGUF file or a manifest, with the defaults "
                 "docs/running.md documents (printed)")
      ->excludes(files);
  app.add_option("--set", sets, "override a deployment key: dotted.key=value (repeatable)")->allow_extra_args(false);
  app.add_flag("--json", json, "print the plan as JSON");
  if (auto rc = mstar::cli::parse(app, argc, argv)) return *rc;
  const auto set_list = mstar::cli::sets(sets, "mstar-check");
  if (!set_list) return mstar::cli::kUsage;
  if (configs.empty() && model.empty()) {
    fmt::print(stderr, "mstar-check: give deployment files or --model PATH\n");
    return mstar::cli::kUsage;
  }
  return mstar::cli::guarded("mstar-check", [&] {
    std::optional<mstar::cli::ModelDeployment> built;
    if (!model.empty()) {
      built.emplace(model);
      configs = {built->config().string()};
    }
    int rc = mstar::cli::kOk;
    nlohmann::json plans = nlohmann::json::array();
    for (const auto& path : configs) {
      mstar::Diagnostics diags;
      auto resolved = mstar::load_deployment(path, *set_list, diags);
      if (!resolved) {
        std::cerr << diags.str();
        fmt::print(stderr, "{}: {} error{}\n", path, diags.all().size(), diags.all().size() == 1 ? "" : "s");
        rc = mstar::cli::kInvalid;
        continue;
      }
      const auto plan = mstar::memory_plan_json(*resolved);
      if (json) plans.push_back(plan);
      else std::cout << (&path == &configs.front() ? "" : "\n") << mstar::memory_plan_text(plan);
    }
    // Paths and keys may hold bytes that are not UTF-8: they print as U+FFFD.
    if (json) std::cout << mstar::dump_json(configs.size() == 1 && !plans.empty() ? plans[0] : plans, 2) << "\n";
    return rc;
  });
}
