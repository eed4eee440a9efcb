#pragma once
// mstar-serve: a deployment's Engine behind an HTTP server (cpp-httplib 0.11,
// Debian's libcpp-httplib-dev). docs/serving.md is the user's guide.
//
//   POST /v1/generate   a request object as mstar-run reads it (docs/running.md);
//                       the answer streams its events as server-sent events
//                       ("data: {...}\n\n"), or as JSON lines when the client
//                       sends "Accept: application/jsonl"
//   GET  /v1/health     {"status": "ok", "uptime_seconds": ...}; the one endpoint
//                       open without the API key, when there is one
//   GET  /v1/models     the model: name, kind, architecture, resources and their occupancy
//   GET  /metrics       Prometheus text format
//
// With an API key (ServeOptions::api_key), a request without it, to any
// path but /v1/health, is answered 401 and nothing else.
//
//   mstar::serve::Server server(resolved, options);
//   int port = server.start();        // listening; the engine waits for work
//   ...
//   ShutdownReport r = server.stop(); // graceful: drain or cancel, then close
#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "config/deployment.h"
#include "serve/engine_loop.h"

namespace mstar::serve {

struct ServeOptions {
  std::string host = "127.0.0.1";  // loopback unless asked
  std::string api_key;             // non-empty: every endpoint but /v1/health wants "Authorization: Bearer KEY" (api_key.h)
  std::string ssl_cert, ssl_key;   // both set: HTTPS only (PEM certificate chain and its key; tls.h)
  int port = 8080;                 // 0: a free port, chosen by the system
  int64_t max_queue = 64;          // requests waiting for admission before 429
  std::size_t max_body = 1 << 20;  // bytes of a request body before 413
  int threads_http = 128;          // connections served at once (each stream holds one); as many more may wait
  std::size_t stream_buffer = 256;  // unread events per stream before its request is cancelled
  int read_timeout_s = 5;          // for a whole request, head and body
  int write_timeout_s = 5;         // per write of a response: a client that takes no bytes for this long is dropped
  double drain_seconds = 0;        // at shutdown: how long running streams may go on before they are cancelled
  Progress loading;                // hears the weights load (mstar-serve: a line on a terminal)
};

class HttpServer;  // httplib::Server over this server's own connections
class Listener;
class TlsContext;

class Server {
 public:
  // Reads the certificate and key, then builds the engine (throws
  // InputError naming a certificate or key that does not do, ConfigError or
  // InputError as Engine::create does).
  Server(const ResolvedDeployment& d, ServeOptions options);
  ~Server();
  Server(const Server&) = delete;
  Server& operator=(const Server&) = delete;

  // Binds and starts serving on a thread; returns the port. Throws
  // InputError naming the address when it cannot be bound.
  int start();
  int port() const;
  const ServeOptions& options() const { return options_; }

  // Asks for a shutdown (a signal, a test); wait_stop_request() returns.
  // Also asked by the engine thread when a step fails.
  void request_stop();
  void wait_stop_request();
  // Refuses new requests, drains running streams for up to drain_seconds,
  // cancels the rest (their clients get the done event of reason
  // "cancelled"), closes the listener and stops the engine. Idempotent.
  ShutdownReport stop();
  // The engine failed ("" while it runs): mstar-serve then exits 2.
  std::string failure() const { return loop_->failure(); }

  EngineLoop& loop() { return *loop_; }

 private:
  void routes();
  std::string metrics_text() const;

  ServeOptions options_;
  std::unique_ptr<TlsContext> tls_;  // null: plain HTTP
  std::unique_ptr<EngineLoop> loop_;
  std::unique_ptr<HttpServer> http_;
  nlohmann::json model_;  // /v1/models' static part
  std::atomic<uint64_t> next_id_{0};  // ids given to requests that bring none: mstar-1, mstar-2, ...
  const std::chrono::steady_clock::time_point started_ = std::chrono::steady_clock::now();
  std::unique_ptr<Listener> listener_;

  mutable std::mutex http_mutex_;
  std::map<int, uint64_t> responses_;  // by status

  std::mutex request_mutex_;
  std::condition_variable requested_;
  bool stop_requested_ = false;

  std::mutex stop_mutex_;
  bool stopped_ = false;
  ShutdownReport report_;
};

// Whether `host` (ServeOptions::host) names this machine's loopback only
// (127.0.0.0/8, ::1, localhost): a server bound elsewhere without an API key
// serves anyone who reaches the port, which mstar-serve says when it starts.
[[nodiscard]] bool loopback_only(std::string_view host);

// SIGINT and SIGTERM as a shutdown request. Construct it early in main: it
// installs handlers (process-wide: any thread may take the signal, the
// HTTP server's and the thread pool's included). A signal that comes while
// the model loads is acted on once the server runs; a second one ends the
// process at once.
class ShutdownSignals {
 public:
  ShutdownSignals();
  // Waits for SIGINT or SIGTERM, or for `server` to ask for a stop itself;
  // returns the signal (0 when it was not one). Once.
  int wait(Server& server);
};

}  // namespace mstar::serve
