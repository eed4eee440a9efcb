// mstar-run CONFIG | --model PATH [--set k=v]... [--requests FILE|-] [--out FILE] [--json] [--frames-dir DIR] [--quiet]
// Runs a deployment: events as JSON lines (chunk, frame, done, error) on
// standard output or --out, progress lines (the weights loading, then the
// steps) on standard error when it is a terminal and --quiet is not given,
// and at the end the stats: a table on standard error, or with
// --json one {"event": "stats", ...} object as the last line of the events.
// SIGINT or SIGTERM stops it between steps: every request still waiting or
// running ends with done "cancelled", the stats print, and it exits 128 +
// the signal (130, 143).
#include <signal.h>
#include <unistd.h>

#include <csignal>
#include <fstream>
#include <iostream>

#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include "cli.h"
#include "core/files.h"
#include "core/json_text.h"
#include "engine/engine.h"
#include "engine/program.h"
#include "engine/run.h"

namespace {

// A request id as a file name: letters, digits, '-' and '_' kept, every
// other byte (and a leading '.') written %XX, so no id can leave the
// directory or collide with another.
std::string file_name_of(const std::string& id) {
  std::string out;
  for (size_t i = 0; i < id.size(); ++i) {
    const auto c = static_cast<unsigned char>(id[i]);
    if (std::isalnum(c) || c == '-' || c == '_' || (c == '.' && i > 0)) out += static_cast<char>(c);
    else out += fmt::format("%{:02X}", c);
  }
  return out;
}

// The signal that asked the run to stop (SIGINT, SIGTERM), 0 while none did.
volatile std::sig_atomic_t g_stop_signal = 0;

// A first SIGINT or SIGTERM asks the run to stop between steps (every
// request ends cancelled, the stats print); the handler then goes back to
// the default, so a second one ends the process at once.
void on_stop_signal(int sig) { g_stop_signal = sig; }

void catch_stop_signals() {
  struct sigaction sa {};
  sa.sa_handler = on_stop_signal;
  sa.sa_flags = SA_RESETHAND;
  sigemptyset(&sa.sa_mask);
  sigaction(SIGINT, &sa, nullptr);
  sigaction(SIGTERM, &sa, nullptr);
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"Run streaming generation for a deployment"};
  std::string requests, out_path, frames_dir;
  std::vector<std::string> sets;
  bool json = false;
  mstar::cli::ConfigOrModel given;
  given.add(app);
  app.add_option("--set", sets, "override a deployment key: dotted.key=value (repeatable)")->allow_extra_args(false);
  app.add_option("--requests", requests, "JSON lines of requests (a file, or - for standard input)");
  app.add_option("--out", out_path, "write events here instead of standard output");
  app.add_option("--frames-dir", frames_dir, "frames: write each frame's latents as raw f32 files here");
  app.add_flag("--json", json, "print the final stats as one JSON object (the last event line)");
  bool quiet = false;
  app.add_flag("--quiet", quiet, "no progress lines on a terminal (the weights loading, the steps)");
  if (auto rc = mstar::cli::parse(app, argc, argv)) return *rc;
  const auto set_list = mstar::cli::sets(sets, "mstar-run");
  if (!set_list) return mstar::cli::kUsage;
  if (!given.given("mstar-run")) return mstar::cli::kUsage;
  return mstar::cli::guarded("mstar-run", [&] {
    std::optional<mstar::cli::ModelDeployment> built;
    if (!given.model.empty()) built.emplace(given.model);
    mstar::Diagnostics diags;
    auto resolved = mstar::load_deployment(built ? built->config().string() : given.config, *set_list, diags);
    if (!resolved) {
      std::cerr << diags.str();
      return mstar::cli::kInvalid;
    }
    // Every event write is checked: a full disk or a closed pipe ends the
    // run with exit 1 instead of losing events.
    mstar::OutputFile out = out_path.empty() ? mstar::OutputFile::standard_output() : mstar::OutputFile(out_path);
    std::unique_ptr<mstar::LineSource> lines;
    if (requests.empty()) {
      lines = mstar::workload_lines(*resolved);
    } else if (requests == "-") {
      lines = mstar::sorted_lines(mstar::read_request_lines(std::cin, "--requests -"));
    } else {
      const std::string name = "--requests " + requests;
      std::ifstream in = mstar::open_input(requests, name);
      lines = mstar::sorted_lines(mstar::read_request_lines(in, name));
    }
    if (!frames_dir.empty()) {
      if (resolved->model.family->task != "frames")
        throw mstar::InputError(fmt::format("--frames-dir {}: this deployment's model (kind {}) makes {}, not frames",
                                            frames_dir, resolved->model.family->name, resolved->model.family->task));
      // The folder itself is made, not its parents: a mistyped path fails here.
      const std::filesystem::path dir(frames_dir);
      std::error_code ec;
      const std::filesystem::path parent = dir.has_parent_path() ? dir.parent_path() : std::filesystem::path(".");
      if (!std::filesystem::is_directory(parent, ec))
        throw mstar::InputError(fmt::format("--frames-dir {}: its parent folder {} does not exist", frames_dir,
                                            parent.string()));
      std::filesystem::create_directory(dir, ec);
      if (ec) throw mstar::InputError(fmt::format("--frames-dir {}: cannot be created: {}", frames_dir, ec.message()));
    }
    mstar::RunOptions options;
    const bool progress_lines = !quiet && isatty(STDERR_FILENO);
    if (progress_lines)
      options.on_step = [](const mstar::Engine& e) {
        const mstar::RunStats& s = e.counters();
        const double t = e.seconds();
        fmt::print(stderr, "\rstep {:>6}  {} {:>8}  {:>7.1f} {}/s  {} done  {} failed ", s.steps, s.unit, s.produced,
                   t > 0 ? static_cast<double>(s.produced) / t : 0.0, s.unit, s.requests_done, s.requests_failed);
      };
    auto engine = mstar::Engine::create(*resolved, mstar::cli::progress_unless(quiet));
    options.after_step = [&] { out.flush(); };
    catch_stop_signals();
    options.stop = [] { return g_stop_signal != 0; };
    const auto stats = mstar::run_lines(*engine, *lines, options, [&](const mstar::Event& e) {
      out.write(mstar::dump_json(e.body) + "\n");
      if (frames_dir.empty() || e.latents.empty()) return;
      const auto path = std::filesystem::path(frames_dir) /
                        fmt::format("{}-{:06}.f32", file_name_of(e.body["id"].get<std::string>()), e.body["frame"].get<int64_t>());
      mstar::OutputFile f(path);
      f.write(std::string_view(reinterpret_cast<const char*>(e.latents.data()), e.latents.size() * sizeof(float)));
      f.close(false);  // one file per frame: a sync each would cost more than the frame
    });
    if (progress_lines) fmt::print(stderr, "\n");
    if (json) {
      auto j = stats.to_json();
      j["event"] = "stats";
      out.write(mstar::dump_json(j) + "\n");
    } else {
      std::cerr << stats.table();
    }
    out.close();
    if (g_stop_signal != 0) {
      fmt::print(stderr, "mstar-run: stopped by {}; the requests still running ended cancelled\n",
                 g_stop_signal == SIGINT ? "SIGINT" : "SIGTERM");
      return 128 + static_cast<int>(g_stop_signal);  // as a shell reports a process a signal ended
    }
    // Requests that all failed are a run that did nothing asked of it: its
    // input was wrong, whatever the events say one by one.
    if (stats.requests_failed > 0 && stats.requests_done == 0 && stats.requests_cancelled == 0) {
      fmt::print(stderr, "mstar-run: every request failed ({}); see their error events\n", stats.requests_failed);
      return mstar::cli::kInvalid;
    }
    return mstar::cli::kOk;
  });
}
