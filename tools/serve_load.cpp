// mstar-serve-load: a load generator for mstar-serve, and the serving-overhead
// measurement of docs/PERFORMANCE.md ("Today's figures", row `serve`).
//
//   mstar-serve-load load --port N [--clients 64] [--seconds 60] [--hangup 0.1] [--garbage 0.1] [--json]
//     Streaming clients against a running server on loopback, each sending
//     one request after another until the time is up: a fraction hang up
//     after their first chunk, a fraction send garbage (not JSON, not HTTP,
//     a body over the limit, a bad field). Reports requests served, time to
//     first chunk p50/p99 (from the request written to its first chunk
//     parsed), refusals and anything unexpected.
//
//   mstar-serve-load compare CONFIG [--set k=v]... [--streams 16] [--max-tokens 256] [--repeats 5]
//     The same requests, all arriving at once, run (a) as mstar-run runs
//     them (run_lines on an Engine) and (b) through a Server in this process
//     over loopback HTTP, one client thread per stream; alternated, medians
//     reported: throughput (tokens over the wall time from the first request
//     to the last event) and time to first chunk.
//
// Clients are plain blocking sockets (one thread each), so the generator
// costs little beside the server on a small machine.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <iostream>
#include <latch>
#include <map>
#include <mutex>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include <CLI/CLI.hpp>
#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "../apps/cli.h"
#include "engine/engine.h"
#include "engine/program.h"
#include "engine/run.h"
#include "engine/stats.h"
#include "serve/server.h"

namespace {

using nlohmann::json;
using namespace std::string_literals;
using Clock = std::chrono::steady_clock;

double ms_between(Clock::time_point a, Clock::time_point b) {
  return std::chrono::duration<double, std::milli>(b - a).count();
}

struct Outcome {
  enum class Kind { done, error_event, hung_up, refused, broken } kind = Kind::broken;
  int status = 0;           // the HTTP status (0: none was read)
  double first_chunk_ms = -1;  // written to first chunk parsed
  double total_ms = 0;
  int64_t tokens = 0;
  std::string detail;       // what went wrong, for broken ones
};

int connect_loopback(int port) {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  if (fd < 0) return -1;
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(static_cast<uint16_t>(port));
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  const int one = 1;
  setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
  timeval tv{30, 0};  // nothing the server does should take this long: a stall is reported, not waited out
  setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  if (::connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0) {
    ::close(fd);
    return -1;
  }
  return fd;
}

std::string http_post(const std::string& body) {
  return fmt::format(
      "POST /v1/generate HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nConnection: close\r\n"
      "Content-Length: {}\r\n\r\n{}",
      body.size(), body);
}

// Sends `raw` and reads the answer: a 200's chunked server-sent events until
// its done or error event (or, with `hang_up`, its first chunk), anything
// else to the end.
Outcome exchange(int port, const std::string& raw, bool hang_up) {
  Outcome o;
  const int fd = connect_loopback(port);
  if (fd < 0) {
    o.detail = "connect failed";
    return o;
  }
  const auto start = Clock::now();
  for (size_t sent = 0; sent < raw.size();) {
    const ssize_t n = ::send(fd, raw.data() + sent, raw.size() - sent, MSG_NOSIGNAL);
    if (n <= 0) break;  // the server may refuse before reading it all (413)
    sent += static_cast<size_t>(n);
  }
  std::string in, decoded;
  size_t pos = 0;  // parsed up to here in `in`
  bool head = false;
  int64_t chunk_left = -1;  // bytes of the current HTTP chunk still to come; -1: a size line is next
  bool last_chunk = false;  // the zero-size chunk that ends the body was read
  char buf[16384];
  auto finish = [&](Outcome::Kind k) {
    o.kind = k;
    o.total_ms = ms_between(start, Clock::now());
    ::close(fd);
    return o;
  };
  for (;;) {
    const ssize_t n = ::recv(fd, buf, sizeof buf, 0);
    if (n <= 0) {
      if (head && o.status != 200) return finish(Outcome::Kind::refused);
      o.detail = n == 0 ? "closed mid-stream" : "read timed out or failed";
      return finish(Outcome::Kind::broken);
    }
    in.append(buf, static_cast<size_t>(n));
    if (!head) {
      const size_t e = in.find("\r\n\r\n");
      if (e == std::string::npos) continue;
      head = true;
      if (in.compare(0, 9, "HTTP/1.1 ") == 0) o.status = std::atoi(in.c_str() + 9);
      pos = e + 4;
      if (o.status != 200) continue;  // read the refusal to its end (Connection: close)
    }
    if (o.status != 200) continue;
    // Chunked transfer coding: "<hex size>\r\n<data>\r\n" ..., then "0\r\n\r\n".
    while (!last_chunk) {
      if (chunk_left < 0) {
        const size_t e = in.find("\r\n", pos);
        if (e == std::string::npos) break;
        chunk_left = std::stoll(in.substr(pos, e - pos), nullptr, 16);
        pos = e + 2;
        if (chunk_left == 0) {
          last_chunk = true;
          break;
        }
      }
      if (in.size() < pos + static_cast<size_t>(chunk_left) + 2) break;
      decoded.append(in, pos, static_cast<size_t>(chunk_left));
      pos += static_cast<size_t>(chunk_left) + 2;
      chunk_left = -1;
    }
    in.erase(0, pos);
    pos = 0;
    for (size_t e; (e = decoded.find("\n\n")) != std::string::npos;) {
      const json ev = json::parse(decoded.substr(6, e - 6), nullptr, false);  // after "data: "
      decoded.erase(0, e + 2);
      if (ev.is_discarded()) {
        o.detail = "an event that is not JSON";
        return finish(Outcome::Kind::broken);
      }
      const std::string kind = ev.value("event", "");
      if (kind == "chunk" || kind == "frame") {
        if (o.first_chunk_ms < 0) o.first_chunk_ms = ms_between(start, Clock::now());
        o.tokens += kind == "chunk" ? static_cast<int64_t>(ev["tokens"].size()) : 1;
        if (hang_up) return finish(Outcome::Kind::hung_up);
      } else if (kind == "done") {
        return finish(Outcome::Kind::done);
      } else if (kind == "error") {
        o.detail = ev.value("message", "");
        return finish(Outcome::Kind::error_event);
      }
    }
    if (last_chunk) {
      o.detail = "the stream ended without a done or error event";
      return finish(Outcome::Kind::broken);
    }
  }
}

json speech_request(const std::string& id, const std::vector<std::string>& voices, uint64_t n, int64_t max_tokens,
                    bool greedy) {
  json r{{"id", id}, {"voice", voices[n % voices.size()]}, {"prompt", {1 + n % 7, 2, 3 + n % 5}}, {"max_tokens", max_tokens}};
  if (!greedy) r["sampling"] = {{"temperature", 0.8}, {"top_k", 50}, {"top_p", 0.95}, {"seed", n}};
  return r;
}

double pct(std::vector<double> v, double p) { return mstar::percentile(std::move(v), p); }

int load(int port, int clients, double seconds, double hangup, double garbage, int64_t max_tokens,
         const std::vector<std::string>& voices, bool as_json) {
  std::mutex m;
  std::vector<Outcome> outcomes;
  int64_t garbage_sent = 0, garbage_refused = 0;
  std::vector<std::string> unexpected;
  const auto deadline = Clock::now() + std::chrono::duration<double>(seconds);
  std::vector<std::thread> threads;
  for (int c = 0; c < clients; ++c)
    threads.emplace_back([&, c] {
      std::mt19937_64 rng(static_cast<uint64_t>(c) * 7919 + 1);
      std::uniform_real_distribution<double> u(0, 1);
      for (uint64_t n = 0; Clock::now() < deadline; ++n) {
        const double r = u(rng);
        const std::string id = fmt::format("c{}-{}", c, n);
        if (r < garbage) {
          // Four kinds of garbage; each must be refused (400 or 413) and nothing else.
          std::string raw;
          switch (n % 4) {
            case 0: raw = http_post("{\"id\": \"" + id + "\", \"voice\": "); break;              // not JSON
            case 1: raw = "\x16\x03\x01\x02\x00 not http at all\r\n\r\n"s; break;  // not HTTP (a NUL inside)
            case 2: raw = http_post(std::string(2 << 20, '[')); break;                          // over --max-body
            default: raw = http_post(json{{"id", id}, {"voice", "nobody"}, {"prompt", {1}}, {"max_tokens", 2}}.dump());
          }
          const Outcome o = exchange(port, raw, false);
          std::lock_guard lock(m);
          ++garbage_sent;
          if (o.kind == Outcome::Kind::refused && (o.status == 400 || o.status == 413)) ++garbage_refused;
          else unexpected.push_back(fmt::format("garbage kind {}: status {} {}", n % 4, o.status, o.detail));
          continue;
        }
        const bool hang = r < garbage + hangup;
        Outcome o = exchange(port, http_post(speech_request(id, voices, n, max_tokens, n % 4 == 0).dump()), hang);
        std::lock_guard lock(m);
        if (o.kind == Outcome::Kind::broken || o.kind == Outcome::Kind::error_event ||
            (o.kind == Outcome::Kind::refused && o.status != 429))
          unexpected.push_back(fmt::format("{}: status {} {}", id, o.status, o.detail));
        outcomes.push_back(std::move(o));
      }
    });
  for (auto& t : threads) t.join();
  int64_t done = 0, hung = 0, busy = 0, tokens = 0;
  std::vector<double> ttfc, total;
  for (const Outcome& o : outcomes) {
    done += o.kind == Outcome::Kind::done;
    hung += o.kind == Outcome::Kind::hung_up;
    busy += o.kind == Outcome::Kind::refused && o.status == 429;
    tokens += o.tokens;
    if (o.first_chunk_ms >= 0) ttfc.push_back(o.first_chunk_ms);
    if (o.kind == Outcome::Kind::done) total.push_back(o.total_ms);
  }
  const json report{{"clients", clients},
                    {"seconds", seconds},
                    {"streams_done", done},
                    {"streams_hung_up", hung},
                    {"refused_429", busy},
                    {"garbage_sent", garbage_sent},
                    {"garbage_refused", garbage_refused},
                    {"unexpected", unexpected.size()},
                    {"tokens", tokens},
                    {"tokens_per_second", static_cast<double>(tokens) / seconds},
                    {"first_chunk_ms", {{"p50", pct(ttfc, 50)}, {"p99", pct(ttfc, 99)}, {"n", ttfc.size()}}},
                    {"stream_ms", {{"p50", pct(total, 50)}, {"p99", pct(total, 99)}}}};
  if (as_json) {
    std::cout << report.dump() << "\n";
  } else {
    fmt::print("{} clients for {} s: {} streams done, {} hung up after their first chunk, {} refused busy (429)\n",
               clients, seconds, done, hung, busy);
    fmt::print("garbage: {} sent, {} refused with 400/413\n", garbage_sent, garbage_refused);
    fmt::print("tokens received: {} ({:.0f}/s)\n", tokens, static_cast<double>(tokens) / seconds);
    fmt::print("time to first chunk: p50 {:.1f} ms, p99 {:.1f} ms ({} streams)\n", pct(ttfc, 50), pct(ttfc, 99), ttfc.size());
    fmt::print("whole stream: p50 {:.1f} ms, p99 {:.1f} ms\n", pct(total, 50), pct(total, 99));
    fmt::print("unexpected: {}\n", unexpected.size());
  }
  for (size_t i = 0; i < std::min<size_t>(unexpected.size(), 10); ++i) fmt::print(stderr, "  {}\n", unexpected[i]);
  return unexpected.empty() ? mstar::cli::kOk : mstar::cli::kInvalid;
}

struct Measured {
  double seconds = 0;  // first request to last event
  double engine_thread_share = 0;  // serve: the engine thread's time on the server's work, over its time in steps
  double cpu_seconds = 0;  // the process's CPU time meanwhile, the load clients' own excluded
  int64_t tokens = 0;
  double first_chunk_p50_ms = 0;
};

double process_cpu_seconds() {
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  return static_cast<double>(u.ru_utime.tv_sec + u.ru_stime.tv_sec) +
         1e-6 * static_cast<double>(u.ru_utime.tv_usec + u.ru_stime.tv_usec);
}

double thread_cpu_seconds() {
  timespec t{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
  return static_cast<double>(t.tv_sec) + 1e-9 * static_cast<double>(t.tv_nsec);
}

std::vector<json> compare_requests(const mstar::ResolvedDeployment& d, int streams, int64_t max_tokens, uint64_t round) {
  std::vector<std::string> voices;
  const json listed = d.deployment.workload.value("voices", json::object());
  for (const auto& [name, tokens] : listed.items()) voices.push_back(name);
  if (voices.empty()) throw mstar::InputError("compare: the deployment's workload names no voices");
  std::vector<json> out;
  for (int i = 0; i < streams; ++i)
    out.push_back(speech_request(fmt::format("r{}-{}", round, i), voices, static_cast<uint64_t>(i), max_tokens, i % 4 == 0));
  return out;
}

// One Engine for every round, as the server keeps one: both run warm.
Measured run_baseline(mstar::Engine& engine, const std::vector<json>& requests) {
  const int64_t produced = engine.counters().produced;
  std::vector<mstar::RequestLine> lines;
  for (const json& r : requests) lines.push_back(mstar::parse_request_line(r, "compare"));
  // Time to first chunk as a client sees it: to the first chunk event. (RunStats' first_chunk_ms is
  // taken when the first token is sampled, chunk_tokens steps earlier.)
  std::map<std::string, double> first;
  const double cpu_start = process_cpu_seconds();
  const auto start = Clock::now();
  mstar::run_lines(engine, std::move(lines), {}, [&](const mstar::Event& e) {
    const std::string& kind = e.body["event"].get_ref<const std::string&>();
    if (kind == "chunk" || kind == "frame") first.emplace(e.body["id"].get<std::string>(), ms_between(start, Clock::now()));
  });
  const double cpu = process_cpu_seconds() - cpu_start;
  std::vector<double> ttfc;
  for (const auto& [id, ms] : first) ttfc.push_back(ms);
  Measured m;
  m.seconds = ms_between(start, Clock::now()) / 1000;
  m.cpu_seconds = cpu;
  m.tokens = engine.counters().produced - produced;
  m.first_chunk_p50_ms = mstar::percentile(ttfc, 50);
  return m;
}

Measured run_served(mstar::serve::Server& server, const std::vector<json>& requests) {
  std::vector<Outcome> got(requests.size());
  std::vector<std::thread> threads;
  // Threads first, then every request at once: the engine sees them arrive together, as run_lines submits them.
  std::latch ready(static_cast<std::ptrdiff_t>(requests.size())), go(1);
  std::mutex m_clients;
  double clients_cpu = 0;  // a real client runs elsewhere: its CPU is not the server's
  for (size_t i = 0; i < requests.size(); ++i)
    threads.emplace_back([&, i] {
      ready.count_down();
      go.wait();
      const double t0 = thread_cpu_seconds();
      got[i] = exchange(server.port(), http_post(requests[i].dump()), false);
      const double used = thread_cpu_seconds() - t0;
      std::lock_guard lock(m_clients);
      clients_cpu += used;
    });
  ready.wait();
  const auto times = server.loop().thread_times();
  const double cpu_start = process_cpu_seconds();
  const auto start = Clock::now();
  go.count_down();
  for (auto& t : threads) t.join();
  Measured m;
  m.seconds = ms_between(start, Clock::now()) / 1000;
  m.cpu_seconds = process_cpu_seconds() - cpu_start - clients_cpu;
  const auto after = server.loop().thread_times();
  m.engine_thread_share = (after.serving - times.serving) / (after.stepping - times.stepping);
  std::vector<double> ttfc;
  for (const Outcome& o : got) {
    if (o.kind != Outcome::Kind::done) throw std::runtime_error("compare: a stream did not finish: " + o.detail);
    m.tokens += o.tokens;
    ttfc.push_back(o.first_chunk_ms);
  }
  m.first_chunk_p50_ms = mstar::percentile(ttfc, 50);
  return m;
}

double median(std::vector<double> v) { return mstar::percentile(std::move(v), 50); }

int compare(const mstar::ResolvedDeployment& d, const std::vector<int>& stream_counts, int64_t max_tokens, int repeats,
            bool as_json) {
  mstar::serve::ServeOptions o;
  o.port = 0;
  mstar::serve::Server server(d, o);
  server.start();
  auto engine = mstar::Engine::create(d);
  json rows = json::array();
  if (!as_json)
    fmt::print("{:>7} | {:>10} {:>10} {:>9} | {:>13} {:>13} {:>9} | {:>11} | {:>10} {:>10} {:>8}\n", "streams", "run tok/s",
               "serve tok/s", "overhead", "run cpu us/tok", "serve cpu us/tok", "cpu over", "engine thr.", "run 1st ms",
               "serve 1st ms", "+ms");
  uint64_t round = 0;
  for (const int streams : stream_counts) {
    std::vector<double> run_tps, serve_tps, run_cpu, serve_cpu, run_ttfc, serve_ttfc, share;
    for (int r = 0; r < repeats; ++r) {
      const Measured b = run_baseline(*engine, compare_requests(d, streams, max_tokens, ++round));
      const Measured s = run_served(server, compare_requests(d, streams, max_tokens, ++round));
      if (b.tokens != s.tokens)
        throw std::runtime_error(fmt::format("compare: the two runs produced {} and {} tokens", b.tokens, s.tokens));
      const auto tokens = static_cast<double>(b.tokens);
      run_tps.push_back(tokens / b.seconds);
      serve_tps.push_back(tokens / s.seconds);
      run_cpu.push_back(1e6 * b.cpu_seconds / tokens);
      serve_cpu.push_back(1e6 * s.cpu_seconds / tokens);
      run_ttfc.push_back(b.first_chunk_p50_ms);
      serve_ttfc.push_back(s.first_chunk_p50_ms);
      share.push_back(100 * s.engine_thread_share);
    }
    const double rt = median(run_tps), st = median(serve_tps), rc = median(run_cpu), sc = median(serve_cpu);
    const double rf = median(run_ttfc), sf = median(serve_ttfc), sh = median(share);
    const double overhead = 100 * (rt / st - 1), cpu_overhead = 100 * (sc / rc - 1);
    rows.push_back({{"streams", streams}, {"run_tokens_per_s", rt}, {"serve_tokens_per_s", st}, {"overhead_percent", overhead},
                    {"run_cpu_us_per_token", rc}, {"serve_cpu_us_per_token", sc}, {"cpu_overhead_percent", cpu_overhead},
                    {"engine_thread_serving_percent", sh},
                    {"run_first_chunk_ms", rf}, {"serve_first_chunk_ms", sf}, {"first_chunk_overhead_ms", sf - rf}});
    if (!as_json)
      fmt::print("{:>7} | {:>10.0f} {:>10.0f} {:>8.1f}% | {:>13.0f} {:>13.0f} {:>8.1f}% | {:>10.2f}% | {:>10.2f} {:>10.2f} {:>8.2f}\n",
                 streams, rt, st, overhead, rc, sc, cpu_overhead, sh, rf, sf, sf - rf);
  }
  if (as_json) std::cout << json{{"max_tokens", max_tokens}, {"repeats", repeats}, {"rows", rows}}.dump() << "\n";
  server.stop();
  return mstar::cli::kOk;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"Load and overhead measurements for mstar-serve"};
  app.require_subcommand(1);
  int port = 0, clients = 64, repeats = 5;
  double seconds = 60, hangup = 0.1, garbage = 0.1;
  int64_t max_tokens = 64;
  bool as_json = false;
  std::vector<std::string> voices{"alice", "bob"}, sets;
  std::vector<int> streams{1, 16};
  std::string config;
  auto* l = app.add_subcommand("load", "streaming clients against a running server");
  l->add_option("--port", port, "the server's port on 127.0.0.1")->required()->check(CLI::Range(1, 65535));
  l->add_option("--clients", clients, "concurrent clients")->capture_default_str()->check(CLI::Range(1, 1024));
  l->add_option("--seconds", seconds, "how long to run")->capture_default_str()->check(CLI::Range(0.1, 3600.0));
  l->add_option("--hangup", hangup, "fraction of requests that hang up after their first chunk")->capture_default_str()->check(CLI::Range(0.0, 1.0));
  l->add_option("--garbage", garbage, "fraction of requests that are garbage")->capture_default_str()->check(CLI::Range(0.0, 1.0));
  l->add_option("--max-tokens", max_tokens, "tokens per request")->capture_default_str()->check(CLI::Range(int64_t{1}, int64_t{1} << 24));
  l->add_option("--voice", voices, "voices to ask for (repeatable)")->capture_default_str();
  l->add_flag("--json", as_json, "one JSON object instead of the text report");
  auto* c = app.add_subcommand("compare", "serve against run_lines on the same requests, in this process");
  c->add_option("config", config, "deployment YAML")->required();
  c->add_option("--set", sets, "override a deployment key: dotted.key=value (repeatable)");
  c->add_option("--streams", streams, "concurrent streams (comma list)")->delimiter(',')->capture_default_str();
  c->add_option("--max-tokens", max_tokens, "tokens per request")->capture_default_str()->check(CLI::Range(int64_t{1}, int64_t{1} << 24));
  c->add_option("--repeats", repeats, "alternating runs of each; medians reported")->capture_default_str()->check(CLI::Range(1, 100));
  c->add_flag("--json", as_json, "one JSON object instead of the table");
  if (auto rc = mstar::cli::parse(app, argc, argv)) return *rc;
  return mstar::cli::guarded("mstar-serve-load", [&] {
    if (l->parsed()) return load(port, clients, seconds, hangup, garbage, max_tokens, voices, as_json);
    const auto set_list = mstar::cli::sets(sets, "mstar-serve-load");
    if (!set_list) return mstar::cli::kUsage;
    mstar::Diagnostics diags;
    auto resolved = mstar::load_deployment(config, *set_list, diags);
    if (!resolved) {
      std::cerr << diags.str();
      return mstar::cli::kInvalid;
    }
    return compare(*resolved, streams, max_tokens, repeats, as_json);
  });
}
