#pragma once
// mstar-bench's subcommands, one file each (apps/bench/NAME.cpp): each adds
// its subcommand and options to the program's command line and hands back
// what to run when the command line names it. apps/mstar_bench.cpp parses,
// runs the one named and turns what escapes it into the exit codes (cli.h).
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include <CLI/CLI.hpp>

#include "bench/machine.h"
#include "bench/report.h"
#include "core/progress.h"

namespace mstar::bench::command {

// What every subcommand's run reads: the program's own options (--json,
// --csv, --plot) and the machine it runs on.
struct Context {
  Format format = Format::markdown;
  std::string plot;  // --plot: the SVG chart's file, empty for none
  Machine machine;
  Progress progress;  // where long work reports (a line on a terminal, unless --quiet)
};

// A subcommand's run, once the command line is parsed; returns the exit code.
using Action = std::function<int(const Context&)>;

// Whether a subcommand draws a chart for --plot.
enum class Plot : unsigned char { none, drawn };

struct Subcommand {
  CLI::App* cmd = nullptr;
  Action run;
  Plot plot = Plot::none;
};
// The subcommands added, in the order they were added.
using Subcommands = std::vector<Subcommand>;

// Adds the subcommand `name` to `app` and, to `out`, its run: `run(options,
// context)`, over options that live as long as the program. Returns the
// subcommand, to add its options to, and the options they are read into.
template <class Options>
std::pair<CLI::App*, Options*> add_subcommand(CLI::App& app, Subcommands& out, std::string name, std::string help,
                                              int (*run)(const Options&, const Context&), Plot plot = Plot::none) {
  auto options = std::make_shared<Options>();
  CLI::App* cmd = app.add_subcommand(std::move(name), std::move(help));
  out.push_back({cmd, [options, run](const Context& c) { return run(*options, c); }, plot});
  return {cmd, options.get()};
}

// Each adds its subcommand to `app` and its run to `out`.
void add_memory(CLI::App& app, Subcommands& out);
void add_kernels(CLI::App& app, Subcommands& out);
void add_matmul(CLI::App& app, Subcommands& out);
void add_sample(CLI::App& app, Subcommands& out);
void add_run(CLI::App& app, Subcommands& out);
void add_checkpoint(CLI::App& app, Subcommands& out);
void add_tokenize(CLI::App& app, Subcommands& out);
void add_stream(CLI::App& app, Subcommands& out);
void add_soak(CLI::App& app, Subcommands& out);

// What more than one subcommand shares.

// The help of --neighbours (kernels, matmul).
inline constexpr const char* kNeighboursHelp =
    "busy-looping processes running beside the timed calls (a shared machine)";

// A deployment's YAML and its --set overrides (run, stream, soak).
struct DeploymentArgs {
  std::string config;
  std::vector<std::string> sets;
};

// Adds to `cmd` the deployment's YAML, required, as its first positional
// argument (`help` says what it is), and --set.
void add_deployment(CLI::App& cmd, DeploymentArgs& d, const std::string& help);

// "1,4,16": integers in [minimum, 2^30] for `option`; anything else is a
// ConfigError naming the option and the item.
std::vector<int64_t> parse_list(const std::string& s, const char* option, int64_t minimum = 1);

// Writes `text` to the file `path` (--plot, soak's --samples).
void write_file(const std::string& path, const std::string& text);

}  // namespace mstar::bench::command
