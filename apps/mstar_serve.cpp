// mstar-serve CONFIG | --model PATH [--set k=v]... [--host H] [--port N] [--api-key KEY | --api-key-file PATH]
//                    [--ssl-cert PEM --ssl-key PEM] [--max-queue N]
//                    [--max-body BYTES] [--threads-http N] [--stream-buffer N] [--read-timeout S] [--write-timeout S]
//                    [--drain-seconds S]
// Serves a deployment over HTTP (docs/serving.md): the deployment is loaded
// as mstar-run loads it, its workload's requests are ignored (clients send
// theirs), and the server runs until SIGINT or SIGTERM.
#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include <csignal>
#include <iostream>

#include "cli.h"
#include "engine/program.h"
#include "serve/api_key.h"
#include "serve/server.h"

int main(int argc, char** argv) {
  // First: a signal while the model loads is then a shutdown request too.
  mstar::serve::ShutdownSignals signals;
  CLI::App app{"Serve a deployment over HTTP: streaming generation, health, models and metrics"};
  mstar::cli::ConfigOrModel given;
  std::vector<std::string> sets;
  mstar::serve::ServeOptions o;
  given.add(app);
  app.add_option("--set", sets, "override a deployment key: dotted.key=value (repeatable)")->allow_extra_args(false);
  app.add_option("--host", o.host, "address to listen on")->capture_default_str();
  app.add_option("--port", o.port, "port to listen on; 0 picks a free one")->capture_default_str()->check(CLI::Range(0, 65535));
  auto* key = app.add_option("--api-key", o.api_key,
                              "every endpoint but /v1/health wants Authorization: Bearer KEY (ps shows it: prefer the file)");
  std::string key_file;
  app.add_option("--api-key-file", key_file, "the API key from a file (its one line)")->excludes(key);
  auto* cert = app.add_option("--ssl-cert", o.ssl_cert, "serve HTTPS with this PEM certificate chain (the server's first)");
  auto* cert_key = app.add_option("--ssl-key", o.ssl_key, "the PEM private key of --ssl-cert");
  cert->needs(cert_key);
  cert_key->needs(cert);
  app.add_option("--max-queue", o.max_queue, "requests waiting for admission before 429")
      ->capture_default_str()->check(CLI::Range(int64_t{1}, int64_t{1} << 30));
  app.add_option("--max-body", o.max_body, "largest request body in bytes (413 beyond)")
      ->capture_default_str()->check(CLI::Range(std::size_t{2}, std::size_t{1} << 30));
  app.add_option("--threads-http", o.threads_http, "connections served at once (every stream holds one)")
      ->capture_default_str()->check(CLI::Range(1, 4096));
  app.add_option("--stream-buffer", o.stream_buffer, "unread events per stream before its request is cancelled")
      ->capture_default_str()->check(CLI::Range(std::size_t{1}, std::size_t{1} << 20));
  app.add_option("--read-timeout", o.read_timeout_s, "seconds a read of a request may wait")
      ->capture_default_str()->check(CLI::Range(1, 3600));
  app.add_option("--write-timeout", o.write_timeout_s, "seconds a write of a response may wait")
      ->capture_default_str()->check(CLI::Range(1, 3600));
  app.add_option("--drain-seconds", o.drain_seconds, "at shutdown, how long running streams may finish before they are cancelled")
      ->capture_default_str()->check(CLI::Range(0.0, 86400.0));
  bool quiet = false;
  app.add_flag("--quiet", quiet, "no progress line on a terminal while the weights load");
  if (auto rc = mstar::cli::parse(app, argc, argv)) return *rc;
  o.loading = mstar::cli::progress_unless(quiet);
  const auto set_list = mstar::cli::sets(sets, "mstar-serve");
  if (!set_list) return mstar::cli::kUsage;
  if (!given.given("mstar-serve")) return mstar::cli::kUsage;
  return mstar::cli::guarded("mstar-serve", [&] {
    if (!key_file.empty()) o.api_key = mstar::serve::read_api_key_file(key_file);
    else if (key->count()) mstar::serve::check_api_key(o.api_key, "--api-key");
    std::optional<mstar::cli::ModelDeployment> built;
    if (!given.model.empty()) built.emplace(given.model);
    mstar::Diagnostics diags;
    auto resolved = mstar::load_deployment(built ? built->config().string() : given.config, *set_list, diags);
    if (!resolved) {
      std::cerr << diags.str();
      return mstar::cli::kInvalid;
    }
    mstar::serve::Server server(*resolved, o);
    const int port = server.start();
    const std::string host = o.host.find(':') != std::string::npos ? "[" + o.host + "]" : o.host;
    fmt::print(stderr, "mstar-serve: listening on {}://{}:{}\n", o.ssl_cert.empty() ? "http" : "https", host, port);
    if (o.api_key.empty() && !mstar::serve::loopback_only(o.host))
      fmt::print(stderr, "mstar-serve: warning: {} is not loopback and there is no --api-key: anyone who reaches the "
                 "port can use the model (docs/serving.md, \"Exposing a deployment\")\n", o.host);
    const int sig = signals.wait(server);
    if (sig) fmt::print(stderr, "mstar-serve: {}: stopping\n", sig == SIGINT ? "SIGINT" : "SIGTERM");
    const mstar::serve::ShutdownReport r = server.stop();
    fmt::print(stderr, "mstar-serve: {} streams open at shutdown: {} ended while draining, {} cancelled\n", r.open,
               r.finished, r.cancelled);
    if (const std::string f = server.failure(); !f.empty()) {
      fmt::print(stderr, "mstar-serve: {}\n", f);
      return mstar::cli::kInternal;
    }
    return mstar::cli::kOk;
  });
}
