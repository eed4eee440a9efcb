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
#include <algorithm>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include "bench/machine.h"
#include "bench/report.h"
#include "bench/subcommand.h"
#include "cli.h"

using namespace mstar::bench;

int main(int argc, char** argv) {
  CLI::App app{"Benchmark mstar's kernels and engine against the machine's limits"};
  app.require_subcommand(1);
  app.fallthrough();  // --json, --csv and --plot may follow the subcommand
  bool as_json = false, as_csv = false;
  std::string plot;
  app.add_flag("--json", as_json, "print JSON");
  app.add_flag("--csv", as_csv, "print CSV");
  bool quiet = false;
  app.add_flag("--quiet", quiet, "no progress line on a terminal during long work");
  app.add_option("--plot", plot,
                 "write an SVG chart (kernels: bandwidth fractions; stream: the comparison; soak: memory over time)");

  // One file each, apps/bench/NAME.cpp; the help lists them in this order.
  command::Subcommands subcommands;
  command::add_memory(app, subcommands);
  command::add_kernels(app, subcommands);
  command::add_matmul(app, subcommands);
  command::add_sample(app, subcommands);
  command::add_run(app, subcommands);
  command::add_checkpoint(app, subcommands);
  command::add_tokenize(app, subcommands);
  command::add_stream(app, subcommands);
  command::add_soak(app, subcommands);

  if (auto rc = mstar::cli::parse(app, argc, argv)) return *rc;
  const auto chosen = std::find_if(subcommands.begin(), subcommands.end(), [](const auto& s) { return bool(*s.cmd); });
  if (chosen != subcommands.end() && !plot.empty() && chosen->plot == command::Plot::none) {
    std::vector<std::string> drawing;
    for (const auto& s : subcommands)
      if (s.plot == command::Plot::drawn) drawing.push_back(s.cmd->get_name());
    fmt::print(stderr, "mstar-bench: --plot: {} draws no chart ({} do)\n", chosen->cmd->get_name(),
               fmt::join(drawing, ", "));
    return mstar::cli::kUsage;
  }
  const Format fmt_out = as_json ? Format::json : as_csv ? Format::csv : Format::markdown;
  return mstar::cli::guarded("mstar-bench", [&] {
    const command::Context context{fmt_out, plot, machine(), mstar::cli::progress_unless(quiet)};
    if (fmt_out == Format::markdown) fmt::print("machine: {}\n\n", to_string(context.machine));
    return chosen != subcommands.end() ? chosen->run(context) : mstar::cli::kOk;
  });
}
