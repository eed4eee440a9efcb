#include "serve/server.h"

#include <fcntl.h>
#include <signal.h>
#include <unistd.h>
#include <sys/socket.h>

#include <cerrno>
#include <cstring>
#include <functional>
#include <string_view>

#include <fmt/format.h>
#include <httplib.h>

#include "core/errors.h"
#include "core/json_text.h"
#include "engine/run.h"
#include "serve/api_key.h"
#include "serve/connections.h"
#include "serve/tls.h"

namespace mstar::serve {

using nlohmann::json;

// httplib's HTTP handling over this server's own connections
// (connections.h): its protected process_request reads one request from a
// Stream, routes it and writes the response. httplib's writers of streamed
// responses stop once its listening socket is invalid, so the socket this
// server listens on stands in for it while it serves.
class HttpServer final : public httplib::Server {
 public:
  void serve(httplib::Stream& s) {
    bool closed = false;
    process_request(s, /*close_connection=*/true, closed, nullptr);
  }
  void set_listening(int fd) { svr_sock_ = fd; }
};

namespace {

// Request objects nest two or three levels; nothing needs more than this.
// nlohmann's dump() and the engine's messages recurse per level, so a body
// of a million '[' must be refused before it is parsed.
constexpr int kMaxDepth = 32;
// How long a stream's connection thread waits for events before it checks
// that the client is still there (a closed connection is seen within this).
constexpr std::chrono::milliseconds kPoll{50};

bool deeper_than(std::string_view s, int limit) {
  int depth = 0;
  bool in_string = false, escaped = false;
  for (char c : s) {
    if (in_string) {
      if (escaped) escaped = false;
      else if (c == '\\') escaped = true;
      else if (c == '"') in_string = false;
    } else if (c == '"') {
      in_string = true;
    } else if (c == '[' || c == '{') {
      if (++depth > limit) return true;
    } else if (c == ']' || c == '}') {
      --depth;
    }
  }
  return false;
}

// Never throws: the engine's messages cut values at 60 bytes, which can split
// a UTF-8 sequence; such bytes are replaced.
std::string dump(const json& j) { return j.dump(-1, ' ', false, json::error_handler_t::replace); }

void send_json(httplib::Response& res, int status, const json& body) {
  res.status = status;
  res.set_content(dump(body) + "\n", "application/json");
}

void send_error(httplib::Response& res, int status, const std::string& message) {
  send_json(res, status, json{{"error", message}});
}

bool wants_jsonl(const httplib::Request& req) {
  const std::string accept = req.get_header_value("Accept");
  return accept.find("application/jsonl") != std::string::npos ||
         accept.find("application/x-ndjson") != std::string::npos;
}

}  // namespace

Server::Server(const ResolvedDeployment& d, ServeOptions options) : options_(std::move(options)) {
  if (options_.threads_http < 1) throw ConfigError("--threads-http must be at least 1");
  if (options_.max_queue < 1) throw ConfigError("--max-queue must be at least 1");
  if (options_.stream_buffer < 1) throw ConfigError("--stream-buffer must be at least 1");
  if (options_.ssl_cert.empty() != options_.ssl_key.empty())
    throw ConfigError("--ssl-cert and --ssl-key go together: HTTPS needs the certificate and its key");
  // A key that could not travel in a header as written would lock every
  // client out (mstar-serve checks it too, naming its option).
  if (!options_.api_key.empty()) check_api_key(options_.api_key, "ServeOptions::api_key");
  // Before the weights load: a certificate that does not do is known at once.
  if (!options_.ssl_cert.empty()) tls_ = std::make_unique<TlsContext>(options_.ssl_cert, options_.ssl_key);
  loop_ = std::make_unique<EngineLoop>(d, LoopOptions{options_.max_queue, options_.stream_buffer, options_.loading},
                                       [this](const std::string&) { request_stop(); });
  const ModelManifest& m = d.model;
  model_ = {{"name", m.name}, {"kind", m.family->name}, {"task", m.family->task}, {"unit", loop_->unit()},
            {"architecture", m.arch->to_json()}};
  // The voices a request may name, with their prompt lengths (speech).
  if (d.deployment.workload.contains("voices")) {
    json voices = json::object();
    for (const auto& [name, tokens] : d.deployment.workload["voices"].items()) voices[name] = {{"tokens", tokens.size()}};
    model_["voices"] = std::move(voices);
  }
  http_ = std::make_unique<HttpServer>();
  routes();
}

Server::~Server() { stop(); }

void Server::routes() {
  HttpServer& h = *http_;
  // A declared Content-Length over the limit is refused before the body is
  // read; the connection layer holds any other framing to the same limit.
  h.set_payload_max_length(options_.max_body);
  h.set_logger([this](const httplib::Request&, const httplib::Response& res) {
    std::lock_guard lock(http_mutex_);
    ++responses_[res.status];
  });
  // Every refusal httplib or the connection layer makes (413, 404, a
  // malformed request, a limit) gets a JSON body too; a handler's own error
  // bodies are left as they are.
  h.set_error_handler([this](const httplib::Request& req, httplib::Response& res) {
    if (const Refusal& r = current_refusal(); r.status != 0) {
      res.status = r.status;
      return send_error(res, r.status, r.message);
    }
    if (!res.body.empty()) return;
    if (res.status == 413)
      send_error(res, 413, fmt::format("the request body is larger than {} bytes (--max-body)", options_.max_body));
    else if (res.status == 404)
      send_error(res, 404, fmt::format("no such endpoint: {} {}", req.method, req.path));
    else if (res.status == 400)
      send_error(res, 400, "malformed HTTP request");
    else
      send_error(res, res.status, fmt::format("refused with HTTP status {}", res.status));
  });
  h.set_exception_handler([](const httplib::Request&, httplib::Response& res, std::exception_ptr ep) {
    std::string what = "unknown";
    try {
      std::rethrow_exception(ep);
    } catch (const std::exception& e) {
      what = e.what();
    } catch (...) {
    }
    send_error(res, 500, "internal error: " + what);
  });

  // Before routing, so that without the key no path, not even an unknown
  // one, answers anything but 401.
  if (!options_.api_key.empty())
    h.set_pre_routing_handler([this](const httplib::Request& req, httplib::Response& res) {
      if (req.path == "/v1/health" || bearer_matches(req.get_header_value("Authorization"), options_.api_key))
        return httplib::Server::HandlerResponse::Unhandled;
      res.set_header("WWW-Authenticate", "Bearer");
      send_error(res, 401, "this server wants its API key: Authorization: Bearer KEY");
      return httplib::Server::HandlerResponse::Handled;
    });

  h.Get("/v1/health", [this](const httplib::Request&, httplib::Response& res) {
    const double up = std::chrono::duration<double>(std::chrono::steady_clock::now() - started_).count();
    if (const std::string f = loop_->failure(); !f.empty())
      return send_json(res, 503, {{"status", "failed"}, {"error", f}, {"uptime_seconds", up}});
    if (loop_->shutting_down()) return send_json(res, 503, {{"status", "shutting_down"}, {"uptime_seconds", up}});
    send_json(res, 200, {{"status", "ok"}, {"uptime_seconds", up}});
  });

  h.Get("/v1/models", [this](const httplib::Request&, httplib::Response& res) {
    const Snapshot s = loop_->snapshot();
    json m = model_;
    json resources = json::array();
    for (const auto& r : s.resources)
      resources.push_back({{"key", r.key}, {"type", r.type}, {"unit", r.unit}, {"capacity", r.capacity},
                           {"in_use", r.in_use}, {"bytes", r.bytes}});
    m["resources"] = std::move(resources);
    m["requests"] = {{"waiting", s.waiting}, {"running", s.running}};
    send_json(res, 200, {{"models", json::array({std::move(m)})}});
  });

  h.Get("/metrics", [this](const httplib::Request&, httplib::Response& res) {
    res.set_content(metrics_text(), "text/plain; version=0.0.4; charset=utf-8");
  });

  h.Post("/v1/generate", [this](const httplib::Request& req, httplib::Response& res) {
    const bool jsonl = wants_jsonl(req);
    // A chunked body is only held near the limit by the connection layer; its size is known here.
    if (req.body.size() > options_.max_body)
      return send_error(res, 413, fmt::format("the request body is larger than {} bytes (--max-body)", options_.max_body));
    if (deeper_than(req.body, kMaxDepth))
      return send_error(res, 400, fmt::format("the body nests deeper than {} levels", kMaxDepth));
    // Any JSON the body is not (a syntax error, a NUL byte, a number beyond
    // a double's range in any field) is the client's error, named.
    std::string why;
    std::optional<json> parsed = try_parse_json(req.body, why, kMaxDepth);
    if (!parsed) return send_error(res, 400, "the body is " + why);
    json j = std::move(*parsed);
    // What clients of other servers send: "model" naming what they want
    // served (it must be this server's), and no id (one is given).
    if (j.is_object()) {
      if (const auto m = j.find("model"); m != j.end()) {
        if (*m != model_["name"])
          return send_error(res, 404, fmt::format("body.model: {} is not served here; this server serves {} (GET /v1/models)",
                                                  m->dump(), model_["name"].dump()));
        j.erase(m);
      }
      // (Cancellations and operations are refused below as they are.)
      if (!j.contains("id") && !j.contains("cancel") && !j.contains("op"))
        j["id"] = fmt::format("mstar-{}", next_id_.fetch_add(1) + 1);
      if (const auto id = j.find("id"); id != j.end() && id->is_string())
        res.set_header("X-Request-Id", id->get<std::string>());
    }
    // Then exactly a request line of mstar-run: its "arrival" (a step number,
    // for reproducible runs) is checked and dropped; a request arrives here when it arrives.
    RequestLine line = parse_request_line(std::move(j), "body");
    if (line.kind == RequestLine::Kind::reject) return send_error(res, 400, line.message);
    if (line.kind == RequestLine::Kind::cancel)
      return send_error(res, 400, "body: cancellations are not taken here; close the request's connection to cancel it");
    // A snapshot or a resume names a file on the server's disk: not for
    // whoever can reach the port.
    if (line.kind == RequestLine::Kind::snapshot || line.kind == RequestLine::Kind::resume)
      return send_error(res, 400, "body: snapshots and resumes are not taken here (they name files on the server)");
    Opened o = loop_->open(std::move(line.body));
    if (o.status != 200) {
      if (o.status == 429 || o.status == 503) res.set_header("Retry-After", "1");
      return send_error(res, o.status, o.error);
    }
    std::shared_ptr<Stream> s = o.stream;
    EngineLoop* loop = loop_.get();
    if (const Decision d = loop->decide(*s); d.status != 200) {
      loop->close(*s);
      return send_error(res, d.status, d.error);
    }
    res.set_header("Cache-Control", "no-cache");
    res.set_chunked_content_provider(
        jsonl ? "application/jsonl" : "text/event-stream",
        [loop, s, jsonl](size_t, httplib::DataSink& sink) {
          Taken t = loop->take(*s, kPoll);
          if (t.events.empty()) {
            if (t.end) {
              sink.done();
              return true;
            }
            // No events: a good moment to see whether the client is still
            // there (httplib peeks at the socket: end of file means closed).
            if (!sink.is_writable()) {
              loop->cancel(*s, Cause::disconnect);
              return false;
            }
            return true;
          }
          std::string out;
          for (const json& e : t.events) out += jsonl ? dump(e) + "\n" : "data: " + dump(e) + "\n\n";
          // Looked at first: a write to a connection the client closed can
          // still succeed once (the kernel buffers it), so the write alone
          // would notice one event late.
          if (!sink.is_writable() || !sink.write(out.data(), out.size())) {
            loop->cancel(*s, Cause::disconnect);
            return false;
          }
          if (t.end) sink.done();
          return true;
        },
        [loop, s](bool success) {
          // Called once the response is over, however it ended.
          if (!success) loop->cancel(*s, Cause::disconnect);
          loop->close(*s);
        });
  });
}

bool loopback_only(std::string_view host) {
  return host == "localhost" || host == "::1" || host == "[::1]" || host.rfind("127.", 0) == 0;
}

int Server::port() const { return listener_ ? listener_->port() : -1; }

std::string Server::metrics_text() const {
  std::string o = loop_->metrics_text();
  if (listener_) {
    metric_header(o, "mstar_connections_open", "gauge", "Connections accepted and not yet closed (served or waiting for a thread).");
    o += fmt::format("mstar_connections_open {}\n", listener_->open());
    metric_header(o, "mstar_connections_refused_total", "counter",
                  "Connections answered 503 at once: every thread busy and as many waiting.");
    o += fmt::format("mstar_connections_refused_total {}\n", listener_->refused());
  }
  metric_header(o, "mstar_http_responses_total", "counter", "HTTP responses sent, by status code.");
  std::lock_guard lock(http_mutex_);
  for (const auto& [code, n] : responses_) o += fmt::format("mstar_http_responses_total{{code=\"{}\"}} {}\n", code, n);
  return o;
}

int Server::start() {
  ConnectionLimits limits;
  limits.read_timeout = std::chrono::milliseconds(options_.read_timeout_s * 1000);
  limits.write_timeout = std::chrono::milliseconds(options_.write_timeout_s * 1000);
  limits.max_body = options_.max_body;
  listener_ = std::make_unique<Listener>(options_.host, options_.port, options_.threads_http, limits,
                                         [this](Connection& c) { http_->serve(c); }, tls_.get());
  http_->set_listening(listener_->fd());
  listener_->start();
  return listener_->port();
}

void Server::request_stop() {
  {
    std::lock_guard lock(request_mutex_);
    stop_requested_ = true;
  }
  requested_.notify_all();
}

void Server::wait_stop_request() {
  std::unique_lock lock(request_mutex_);
  requested_.wait(lock, [&] { return stop_requested_; });
}

ShutdownReport Server::stop() {
  std::lock_guard lock(stop_mutex_);
  if (stopped_) return report_;
  stopped_ = true;
  if (listener_) {
    const auto drain = std::chrono::milliseconds(static_cast<int64_t>(options_.drain_seconds * 1000));
    // A connection writing the cancelled streams' last events gives up after its write timeout.
    const auto linger = std::chrono::milliseconds((options_.write_timeout_s + 1) * 1000);
    report_ = loop_->shut(drain, linger);
    http_->set_listening(INVALID_SOCKET);  // any stream still writing stops
    listener_->stop();
  }
  loop_->stop();
  return report_;
}

namespace {

// Written by the signal handler (one byte: the signal), read by
// ShutdownSignals::wait's watcher thread.
int signal_pipe[2] = {-1, -1};

extern "C" void on_shutdown_signal(int sig) {
  const int saved = errno;
  const auto b = static_cast<unsigned char>(sig);
  [[maybe_unused]] const ssize_t n = ::write(signal_pipe[1], &b, 1);
  // A second SIGINT or SIGTERM ends the process at once (the default action).
  struct sigaction dfl {};
  dfl.sa_handler = SIG_DFL;
  sigaction(sig, &dfl, nullptr);
  errno = saved;
}

}  // namespace

ShutdownSignals::ShutdownSignals() {
  if (::pipe2(signal_pipe, O_CLOEXEC) != 0) throw std::runtime_error(std::string("pipe2: ") + std::strerror(errno));
  struct sigaction sa {};
  sa.sa_handler = on_shutdown_signal;
  sigemptyset(&sa.sa_mask);
  sa.sa_flags = SA_RESTART;
  sigaction(SIGINT, &sa, nullptr);
  sigaction(SIGTERM, &sa, nullptr);
}

int ShutdownSignals::wait(Server& server) {
  std::atomic<int> got{0};
  std::thread watcher([&] {
    unsigned char b = 0;
    while (::read(signal_pipe[0], &b, 1) < 0 && errno == EINTR) {
    }
    if (b != 0) {
      got = b;
      server.request_stop();
    }
  });
  server.wait_stop_request();
  // The server asked for the stop itself: a zero byte ends the watcher.
  const unsigned char zero = 0;
  [[maybe_unused]] const ssize_t n = ::write(signal_pipe[1], &zero, 1);
  watcher.join();
  return got;
}

}  // namespace mstar::serve
