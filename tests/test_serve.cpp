// mstar-serve through its library: a server on a free loopback port in this
// process, spoken to with httplib's client and raw sockets. Streams carry
// exactly the engine's events whatever other clients do; a client that hangs
// up, reads too slowly or sends garbage harms no one else; limits answer
// with JSON; /metrics is Prometheus text; shutdown drains or cancels.
#include <doctest/doctest.h>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <cstdlib>
#include <filesystem>
#include <functional>
#include <map>
#include <regex>
#include <set>
#include <sstream>
#include <thread>

#include <httplib.h>

#include "deployments.h"
#include "engine/engine.h"
#include "engine/program.h"
#include "engine/run.h"
#include "serve/server.h"

using namespace mstar;
using nlohmann::json;

namespace {

// A server on a free loopback port, stopped when it goes out of scope.
struct Running {
  serve::Server server;
  int port;
  explicit Running(const ResolvedDeployment& d, serve::ServeOptions o = {})
      : server(d, (o.port = 0, o)), port(server.start()) {}
};

// What the engine alone streams for these requests, all arriving at once.
std::map<std::string, std::vector<json>> expected(const ResolvedDeployment& d, const std::vector<json>& requests) {
  auto engine = Engine::create(d);
  std::vector<RequestLine> lines;
  for (const json& r : requests) lines.push_back(parse_request_line(r, "test"));
  std::map<std::string, std::vector<json>> out;
  run_lines(*engine, std::move(lines), {}, [&](const Event& e) { out[e.body["id"].get<std::string>()].push_back(e.body); });
  return out;
}

struct Streamed {
  int status = 0;
  std::string content_type, retry_after;
  std::vector<json> events;  // a 200's events, parsed
  std::string text;          // the raw body
  httplib::Error error = httplib::Error::Success;
};

// POST /v1/generate with `body`; a 200's events are parsed as they arrive
// and handed to `on_event`, which hangs up by returning false.
Streamed post(int port, const std::string& body, bool jsonl = false,
              const std::function<bool(const json&)>& on_event = {}) {
  httplib::Client c("127.0.0.1", port);
  c.set_read_timeout(30, 0);
  httplib::Request req;
  req.method = "POST";
  req.path = "/v1/generate";
  req.headers = {{"Content-Type", "application/json"}};
  if (jsonl) req.headers.emplace("Accept", "application/jsonl");
  req.body = body;
  Streamed s;
  std::string pending;
  req.response_handler = [&](const httplib::Response& res) {
    s.status = res.status;
    s.content_type = res.get_header_value("Content-Type");
    s.retry_after = res.get_header_value("Retry-After");
    return true;
  };
  req.content_receiver = [&](const char* data, size_t n, uint64_t, uint64_t) {
    s.text.append(data, n);
    if (s.status != 200) return true;
    pending.append(data, n);
    const std::string sep = jsonl ? "\n" : "\n\n";
    for (size_t p; (p = pending.find(sep)) != std::string::npos;) {
      std::string line = pending.substr(0, p);
      pending.erase(0, p + sep.size());
      if (!jsonl) {
        REQUIRE(line.rfind("data: ", 0) == 0);
        line.erase(0, 6);
      }
      s.events.push_back(json::parse(line));
      if (on_event && !on_event(s.events.back())) return false;
    }
    return true;
  };
  const auto result = c.send(req);
  s.error = result.error();
  if (result && s.status != 200) s.text = result->body.empty() ? s.text : result->body;
  return s;
}

Streamed post(int port, const json& request, bool jsonl = false, const std::function<bool(const json&)>& on_event = {}) {
  return post(port, request.dump(), jsonl, on_event);
}

json get_json(int port, const std::string& path) {
  httplib::Client c("127.0.0.1", port);
  auto r = c.Get(path.c_str());
  REQUIRE(r);
  return json::parse(r->body);
}

std::string get_text(int port, const std::string& path) {
  httplib::Client c("127.0.0.1", port);
  auto r = c.Get(path.c_str());
  REQUIRE(r);
  REQUIRE(r->status == 200);
  return r->body;
}

// The value of the sample named exactly `series` (name and labels), or -1.
double metric(const std::string& text, const std::string& series) {
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);)
    if (line.size() > series.size() && line.compare(0, series.size(), series) == 0 && line[series.size()] == ' ')
      return std::stod(line.substr(series.size() + 1));
  return -1;
}
double metric(int port, const std::string& series) { return metric(get_text(port, "/metrics"), series); }

int64_t in_use(int port) { return get_json(port, "/v1/models")["models"][0]["resources"][0]["in_use"].get<int64_t>(); }

bool eventually(const std::function<bool()>& condition, double seconds = 10) {
  const auto until = std::chrono::steady_clock::now() + std::chrono::duration<double>(seconds);
  while (std::chrono::steady_clock::now() < until) {
    if (condition()) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return condition();
}

// A raw loopback connection, for what httplib's client will not do: hang up
// before any event, or send bytes that are not HTTP.
struct Raw {
  int fd = -1;
  explicit Raw(int port) {
    fd = ::socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_port = htons(static_cast<uint16_t>(port));
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    REQUIRE(::connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0);
    timeval tv{10, 0};
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  }
  ~Raw() { close(); }
  void close() {
    if (fd >= 0) ::close(fd);
    fd = -1;
  }
  void send(const std::string& s) { REQUIRE(::send(fd, s.data(), s.size(), MSG_NOSIGNAL) == static_cast<ssize_t>(s.size())); }
  void post(const json& request) {
    const std::string body = request.dump();
    send("POST /v1/generate HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: " +
         std::to_string(body.size()) + "\r\n\r\n" + body);
  }
  // Reads until `marker` has been seen (or the peer closes, or 10 s pass).
  std::string read_until(const std::string& marker) {
    std::string got;
    char buf[4096];
    while (got.find(marker) == std::string::npos) {
      const ssize_t n = ::recv(fd, buf, sizeof buf, 0);
      if (n <= 0) break;
      got.append(buf, static_cast<size_t>(n));
    }
    return got;
  }
};

// Greedy unless sampled() says otherwise. A "long" request (max_tokens
// 1 << 24) runs until it is cancelled: the prompts used for them decode
// greedily past 4,000 tokens without the end token (alice [1] meets it at
// 1,073, so it is not one of them).
json speech(const std::string& id, const std::string& voice, std::vector<int> prompt, int max_tokens) {
  return json{{"id", id}, {"voice", voice}, {"prompt", prompt}, {"max_tokens", max_tokens}};
}
json sampled(json r, double temperature, int top_k, uint64_t seed) {
  r["sampling"] = {{"temperature", temperature}, {"top_k", top_k}, {"seed", seed}};
  return r;
}

}  // namespace

TEST_CASE("serve: a request streams the engine's events, as server-sent events or JSON lines") {
  const auto d = test::shipped("tts-demo.yaml");
  const json greedy = speech("g", "alice", {5, 6, 7}, 40);
  const json seeded = sampled(speech("s", "bob", {1, 2}, 40), 0.9, 20, 3);
  const auto want = expected(d, {greedy, seeded});
  REQUIRE(want.at("g").size() == 4);  // three chunks of 16, 16 and 8 tokens, then done
  CHECK(want.at("g").back()["reason"] == "max_tokens");
  Running srv(d);

  const Streamed a = post(srv.port, greedy);
  CHECK(a.status == 200);
  CHECK(a.content_type == "text/event-stream");
  CHECK(a.events == want.at("g"));
  const Streamed b = post(srv.port, seeded, /*jsonl=*/true);
  CHECK(b.status == 200);
  CHECK(b.content_type == "application/jsonl");
  CHECK(b.events == want.at("s"));
  // mstar-run's request lines take an arrival step; here it is checked and dropped.
  json with_arrival = greedy;
  with_arrival["arrival"] = 7;
  CHECK(post(srv.port, with_arrival).events == want.at("g"));
}

TEST_CASE("serve: frame events carry the engine's event body, the latents are not sent") {
  const auto d = test::shipped("world-demo.yaml");
  const json w{{"id", "w"}, {"frames", 2}, {"seed", 4}};
  const auto want = expected(d, {w});
  Running srv(d);
  const Streamed s = post(srv.port, w, true);
  REQUIRE(s.events.size() == 3);
  CHECK(s.events == want.at("w"));
  CHECK(s.events[0]["event"] == "frame");
  CHECK(s.events[0].contains("checksum"));
  CHECK(!s.events[0].contains("latents"));
}

TEST_CASE("serve: concurrent clients each get exactly their own events, whatever the others do") {
  const auto d = test::shipped("tts-demo.yaml");
  std::vector<json> requests;
  for (int i = 0; i < 6; ++i) {
    json r = speech(fmt::format("c{}", i), i % 2 ? "bob" : "alice", {1 + i, 2 + i, 3}, 20 + 8 * i);
    requests.push_back(i % 3 == 0 ? r : sampled(r, 0.7 + 0.1 * i, 10 * i, static_cast<uint64_t>(i)));
  }
  const auto want = expected(d, requests);
  Running srv(d);
  std::vector<Streamed> got(requests.size());
  std::vector<std::thread> threads;
  for (size_t i = 0; i < requests.size(); ++i)
    threads.emplace_back([&, i] { got[i] = post(srv.port, requests[i], i % 2 == 1); });
  // Others meanwhile: long streams that hang up after a chunk or two, and garbage.
  std::atomic<int> hung_up{0}, refused{0};
  for (int k = 0; k < 3; ++k)
    threads.emplace_back([&, k] {
      int chunks = 0;
      const Streamed s = post(srv.port, speech(fmt::format("noise{}", k), "alice", {4}, 1 << 20), false,
                              [&](const json&) { return ++chunks <= k; });
      hung_up += s.error == httplib::Error::Canceled;
    });
  for (int k = 0; k < 2; ++k)
    threads.emplace_back([&, k] {
      refused += post(srv.port, k ? std::string("{\"id\": ") : std::string("\x01\xff garbage")).status == 400;
      Raw raw(srv.port);
      raw.send("NOT HTTP AT ALL\r\n\r\n");
      raw.read_until("\r\n\r\n");
    });
  for (auto& t : threads) t.join();
  for (size_t i = 0; i < requests.size(); ++i) {
    const std::string id = requests[i]["id"];
    CHECK_MESSAGE(got[i].events == want.at(id), id);
  }
  CHECK(hung_up == 3);
  CHECK(refused == 2);
  CHECK(eventually([&] { return in_use(srv.port) == 0; }));
  CHECK(metric(srv.port, R"(mstar_requests_total{outcome="cancelled",cause="disconnect"})") == 3);
  CHECK(get_json(srv.port, "/v1/health")["status"] == "ok");
}

TEST_CASE("serve: a client that hangs up cancels its request at once and frees its slot") {
  const auto d = test::shipped("tts-demo.yaml", {"resources.voice_kv.max_slots=1"});
  Running srv(d);
  SUBCASE("mid-stream") {
    int chunks = 0;
    const Streamed s = post(srv.port, speech("long", "alice", {3}, 1 << 24), false, [&](const json& e) {
      if (chunks == 0) CHECK(in_use(srv.port) == 1);
      return e["event"] == "chunk" && ++chunks < 2;
    });
    CHECK(s.error == httplib::Error::Canceled);
    CHECK(eventually([&] { return in_use(srv.port) == 0; }));
    CHECK(metric(srv.port, R"(mstar_requests_total{outcome="cancelled",cause="disconnect"})") == 1);
    // Its id is free again at once.
    CHECK(post(srv.port, speech("long", "alice", {1}, 3)).events.back()["reason"] == "max_tokens");
  }
  SUBCASE("while it waits for a slot: no event was ever written to it") {
    std::atomic<bool> stop{false};
    std::thread holder([&] { post(srv.port, speech("holder", "bob", {3}, 1 << 24), false, [&](const json&) { return !stop; }); });
    REQUIRE(eventually([&] { return in_use(srv.port) == 1; }));
    Raw waiter(srv.port);
    waiter.post(speech("waiter", "alice", {1}, 8));
    const std::string head = waiter.read_until("\r\n\r\n");  // 200: taken, waiting for the slot
    CHECK(head.rfind("HTTP/1.1 200", 0) == 0);
    CHECK(get_json(srv.port, "/v1/models")["models"][0]["requests"]["waiting"] == 1);
    waiter.close();
    CHECK(eventually([&] { return get_json(srv.port, "/v1/models")["models"][0]["requests"]["waiting"] == 0; }));
    CHECK(metric(srv.port, R"(mstar_requests_total{outcome="cancelled",cause="disconnect"})") == 1);
    stop = true;
    holder.join();
    CHECK(eventually([&] { return in_use(srv.port) == 0; }));
  }
}

TEST_CASE("serve: 429 with Retry-After when the queue is full") {
  const auto d = test::shipped("tts-demo.yaml", {"resources.voice_kv.max_slots=1"});
  serve::ServeOptions o;
  o.max_queue = 1;
  Running srv(d, o);
  std::atomic<bool> stop{false};
  std::thread running([&] { post(srv.port, speech("a", "alice", {3}, 1 << 24), false, [&](const json&) { return !stop; }); });
  REQUIRE(eventually([&] { return in_use(srv.port) == 1; }));
  Raw waiting(srv.port);
  waiting.post(speech("b", "alice", {2}, 1 << 24));
  CHECK(waiting.read_until("\r\n\r\n").rfind("HTTP/1.1 200", 0) == 0);
  const Streamed c = post(srv.port, speech("c", "alice", {1}, 4));
  CHECK(c.status == 429);
  CHECK(c.retry_after == "1");
  CHECK(json::parse(c.text)["error"].get<std::string>().find("the queue is full") != std::string::npos);
  CHECK(metric(srv.port, "mstar_requests_refused_busy_total") == 1);
  // The queue empties when the waiting client hangs up; the next request is taken.
  waiting.close();
  REQUIRE(eventually([&] { return get_json(srv.port, "/v1/models")["models"][0]["requests"]["waiting"] == 0; }));
  stop = true;
  running.join();
  CHECK(post(srv.port, speech("c", "alice", {1}, 4)).events.back()["reason"] == "max_tokens");
}

TEST_CASE("serve: bad requests are refused with a JSON error naming the problem") {
  const auto d = test::shipped("tts-demo.yaml");
  serve::ServeOptions o;
  o.max_body = 4096;
  Running srv(d, o);
  const std::string ok = R"("id": "x", "voice": "alice", "prompt": [1], "max_tokens": 2)";
  const std::vector<std::tuple<std::string, int, std::string>> cases = {
      {"not json", 400, "the body is not valid JSON: parse error at line 1, column 2"},
      {"", 400, "the body is not valid JSON"},
      {"[1, 2]", 400, "body: a request must be a JSON object, got [1,2]"},
      {R"({"id": "", "voice": "alice", "prompt": [1], "max_tokens": 2})", 400, "a request needs a non-empty string 'id'"},
      {R"({"id": 7, "voice": "alice", "prompt": [1], "max_tokens": 2})", 400, "a request needs a non-empty string 'id'"},
      {R"({"id": "x", "voice": "nobody", "prompt": [1], "max_tokens": 2})", 400, "request 'x': unknown voice 'nobody'"},
      {"{" + ok + R"(, "colour": "red"})", 400, "request 'x': unknown field 'colour'"},
      {R"({"id": "x", "voice": "alice", "prompt": [1], "max_tokens": 0})", 400, "request 'x': 'max_tokens'"},
      {R"({"id": "x", "voice": "alice", "prompt": [], "max_tokens": 2})", 400, "the prompt is empty"},
      {"{" + ok + R"(, "sampling": {"temperature": -1}})", 400, "temperature"},
      {"{" + ok + R"(, "arrival": -1})", 400, "body: 'arrival' must be a step"},
      {R"({"cancel": "x"})", 400, "close the request's connection to cancel it"},
      {R"({"op": "snapshot", "id": "x", "path": "/tmp/x.snap"})", 400, "snapshots and resumes are not taken here"},
      {R"({"op": "resume", "path": "/etc/passwd"})", 400, "snapshots and resumes are not taken here"},
      {std::string(100, '['), 400, "the body nests deeper than 32 levels"},
      {"{" + ok + R"(, "pad": 1e400})", 400, "the body is not valid JSON: number overflow parsing '1e400'"},
      {"{" + ok + "}" + std::string(1, '\0') + "garbage", 400, "the body is not valid JSON: a NUL byte at line 1, column"},
      {"{" + ok + ", \"pad\": \"" + std::string(5000, 'p') + "\"}", 413, "larger than 4096 bytes (--max-body)"},
  };
  for (const auto& [body, status, says] : cases) {
    const Streamed s = post(srv.port, body);
    CHECK_MESSAGE(s.status == status, body.substr(0, 80));
    CHECK_MESSAGE(s.content_type == "application/json", body.substr(0, 80));
    const json j = json::parse(s.text, nullptr, false);
    REQUIRE_MESSAGE(j.is_object(), s.text);
    CHECK_MESSAGE(j["error"].get<std::string>().find(says) != std::string::npos, j["error"].get<std::string>());
  }
  // An id already streaming is refused alone; the stream goes on.
  std::atomic<bool> stop{false};
  int chunks = 0;
  std::thread live([&] {
    post(srv.port, speech("dup", "alice", {2}, 1 << 24), false, [&](const json&) { return ++chunks, !stop; });
  });
  REQUIRE(eventually([&] { return chunks > 0; }));
  const Streamed dup = post(srv.port, speech("dup", "bob", {1}, 2));
  CHECK(dup.status == 400);
  CHECK(json::parse(dup.text)["error"] == "request 'dup': a request with this id is already waiting or running");
  const int before = chunks;
  CHECK(eventually([&] { return chunks > before; }));
  stop = true;
  live.join();
  // Endpoints that do not exist, and bytes that are not HTTP.
  httplib::Client c("127.0.0.1", srv.port);
  auto nope = c.Get("/v1/nope");
  REQUIRE(nope);
  CHECK(nope->status == 404);
  CHECK(json::parse(nope->body)["error"] == "no such endpoint: GET /v1/nope");
  Raw raw(srv.port);
  raw.send(std::string("\x16\x03\x01 a TLS hello, say\r\n\r\n"));
  CHECK(raw.read_until("\r\n\r\n").rfind("HTTP/1.1 400", 0) == 0);
  // None of it touched the engine's ability to serve.
  CHECK(post(srv.port, "{" + ok + "}").events.back()["reason"] == "max_tokens");
}

TEST_CASE("serve: the connection layer holds its limits: head, body however framed, time, connections") {
  serve::ServeOptions o;
  o.max_body = 4096;
  o.read_timeout_s = 1;
  o.threads_http = 2;
  Running srv(test::shipped("tts-demo.yaml"), o);
  auto error_of = [](const std::string& answer) {
    const auto b = answer.find("\r\n\r\n");
    REQUIRE(b != std::string::npos);
    return json::parse(answer.substr(b + 4))["error"].get<std::string>();
  };
  {  // a body over the limit, sent chunked (no Content-Length to refuse it by)
    Raw raw(srv.port);
    raw.send("POST /v1/generate HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n");
    const std::string piece = "{\"id\": \"x\", \"pad\": \"" + std::string(5000, 'p') + "\"}";
    raw.send(fmt::format("{:x}\r\n{}\r\n0\r\n\r\n", piece.size(), piece));
    const std::string a = raw.read_until("}\n");
    CHECK(a.rfind("HTTP/1.1 413", 0) == 0);
    CHECK(error_of(a) == "the request body is larger than 4096 bytes (--max-body)");
  }
  {  // endless chunks: refused once past the limit, without reading them all
    Raw raw(srv.port);
    raw.send("POST /v1/generate HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n");
    for (int i = 0; i < 40; ++i)
      if (::send(raw.fd, "1000\r\n", 6, MSG_NOSIGNAL) < 0 || ::send(raw.fd, std::string(4096, 'a').c_str(), 4096, MSG_NOSIGNAL) < 0 ||
          ::send(raw.fd, "\r\n", 2, MSG_NOSIGNAL) < 0)
        break;
    const std::string a = raw.read_until("}\n");
    CHECK(a.rfind("HTTP/1.1 413", 0) == 0);
  }
  {  // header lines without end
    Raw raw(srv.port);
    raw.send("GET /v1/health HTTP/1.1\r\n");
    std::string lines;
    for (int i = 0; i < 4000; ++i) lines += "X-Filler: 0123456789\r\n";  // 88 KB
    ::send(raw.fd, lines.data(), lines.size(), MSG_NOSIGNAL);
    const std::string a = raw.read_until("}\n");
    CHECK(a.rfind("HTTP/1.1 431", 0) == 0);
    CHECK(error_of(a) == "the request's line and headers are larger than 65536 bytes");
  }
  {  // a POST that frames no body: its body is empty, answered at once (411), not at the read timeout (408)
    Raw raw(srv.port);
    raw.send("POST /v1/generate HTTP/1.1\r\nHost: x\r\n\r\n");
    const std::string a = raw.read_until("}\n");
    CHECK(a.rfind("HTTP/1.1 411", 0) == 0);
    CHECK(error_of(a) == "a request with a body needs Content-Length or Transfer-Encoding");
  }
  {  // a body that never finishes arriving
    Raw raw(srv.port);
    raw.send("POST /v1/generate HTTP/1.1\r\nHost: x\r\nContent-Length: 100\r\n\r\n{\"id\"");
    const std::string a = raw.read_until("}\n");
    CHECK(a.rfind("HTTP/1.1 408", 0) == 0);
    CHECK(error_of(a) == "the request did not arrive within 1 s");
  }
  // Four connections open (two served, two waiting for a thread): the fifth
  // is refused at once. The poll that waits for the earlier connections to
  // close is itself a connection, which the server may still count while the
  // four are opened (its close is the server's to finish, after the client has
  // its answer). If it closes between the fourth and the fifth, the fifth
  // waits instead (and is hung up on, silently, when its read times out), so
  // the round is tried again; only a fifth that waits every time fails.
  std::string a;
  for (int round = 0; round < 5 && a.rfind("HTTP/1.1 503", 0) != 0; ++round) {
    CHECK(eventually([&] { return metric(srv.port, "mstar_connections_open") == 1; }));
    std::vector<std::unique_ptr<Raw>> idle;
    for (int i = 0; i < 4; ++i) idle.push_back(std::make_unique<Raw>(srv.port));
    Raw fifth(srv.port);  // accepted after the four: the backlog is first in, first out
    a = fifth.read_until("}\n");
  }
  CHECK(a.rfind("HTTP/1.1 503", 0) == 0);
  CHECK(error_of(a) == "too many connections: 2 served and 2 waiting");
  CHECK(a.find("Retry-After: 1") != std::string::npos);
  // The idle connections are gone; the server answers again (polls made
  // while they held both threads were refused too, hence at least one).
  CHECK(eventually([&] { return get_json(srv.port, "/v1/health")["status"] == "ok"; }));
  CHECK(metric(srv.port, "mstar_connections_refused_total") >= 1);
}

TEST_CASE("serve: a body may name the served model (404 for another) and leave its id to the server") {
  const auto d = test::shipped("tts-demo.yaml");
  Running srv(d);
  json r = speech("named", "alice", {3}, 4);
  r["model"] = d.model.name;
  const Streamed named = post(srv.port, r);
  REQUIRE(named.status == 200);
  CHECK(named.events.back()["id"] == "named");
  r["model"] = "gpt-4";
  const Streamed other = post(srv.port, r);
  CHECK(other.status == 404);
  CHECK(json::parse(other.text)["error"] == "body.model: \"gpt-4\" is not served here; this server serves \"" +
                                               d.model.name + "\" (GET /v1/models)");
  r["model"] = 7;
  CHECK(post(srv.port, r).status == 404);
  // Without an id: one is given, in a header and in every event, and no two alike.
  json anonymous = speech("", "bob", {5}, 4);
  anonymous.erase("id");
  httplib::Client c("127.0.0.1", srv.port);
  std::set<std::string> ids;
  for (int i = 0; i < 2; ++i) {
    const auto res = c.Post("/v1/generate", anonymous.dump(), "application/json");
    REQUIRE(res);
    CHECK(res->status == 200);
    const std::string id = res->get_header_value("X-Request-Id");
    CHECK(id.rfind("mstar-", 0) == 0);
    CHECK(res->body.find("\"id\":\"" + id + "\"") != std::string::npos);
    ids.insert(id);
  }
  CHECK(ids.size() == 2);
  // A client's own id comes back in the header too.
  const auto own = c.Post("/v1/generate", speech("mine", "bob", {5}, 2).dump(), "application/json");
  REQUIRE(own);
  CHECK(own->get_header_value("X-Request-Id") == "mine");
}

TEST_CASE("serve: /metrics is Prometheus text, and counts what happened") {
  const auto d = test::shipped("tts-demo.yaml");
  Running srv(d);
  const Streamed s = post(srv.port, speech("m", "alice", {3}, 20));
  REQUIRE(s.events.size() == 3);
  post(srv.port, std::string("[]"));
  // httplib logs a response (where it is counted) after writing it, so the
  // client can read the 400 before the count moves.
  CHECK(eventually([&] { return metric(srv.port, R"(mstar_http_responses_total{code="400"})") == 1; }));
  const std::string text = get_text(srv.port, "/metrics");
  const std::regex comment(R"(# (HELP|TYPE) [a-zA-Z_:][a-zA-Z0-9_:]* .+)");
  const std::regex sample(
      R"([a-zA-Z_:][a-zA-Z0-9_:]*(\{[a-zA-Z_][a-zA-Z0-9_]*="(\\.|[^"\\])*"(,[a-zA-Z_][a-zA-Z0-9_]*="(\\.|[^"\\])*")*\})? -?([0-9]+(\.[0-9]*)?([eE][-+]?[0-9]+)?|\+Inf|NaN))");
  std::istringstream in(text);
  int lines = 0;
  for (std::string line; std::getline(in, line); ++lines)
    CHECK_MESSAGE((std::regex_match(line, comment) || std::regex_match(line, sample)), line);
  CHECK(lines > 40);
  CHECK(metric(text, R"(mstar_requests_total{outcome="done",reason="max_tokens"})") == 1);
  CHECK(metric(text, R"(mstar_produced_total{unit="tokens"})") == 20);
  CHECK(metric(text, "mstar_time_to_first_chunk_seconds_count") == 1);
  CHECK(metric(text, "mstar_step_duration_seconds_count") == 20);
  CHECK(metric(text, R"(mstar_step_duration_seconds_bucket{le="+Inf"})") == 20);
  CHECK(metric(text, R"(mstar_resource_capacity{resource="voice_kv",type="bounded_kv",unit="slots"})") == 8);
  CHECK(metric(text, R"(mstar_resource_in_use{resource="voice_kv",type="bounded_kv",unit="slots"})") == 0);
  CHECK(metric(text, R"(mstar_resource_bytes{resource="voice_kv",type="bounded_kv",unit="slots"})") > 0);
  CHECK(metric(text, "mstar_requests_waiting") == 0);
  CHECK(metric(text, "mstar_requests_running") == 0);
  CHECK(metric(text, "mstar_resident_memory_bytes") > 1 << 20);
  CHECK(metric(text, R"(mstar_http_responses_total{code="400"})") == 1);
  // Buckets are cumulative.
  double last = 0;
  for (double le : serve::step_buckets()) {
    const double v = metric(text, fmt::format("mstar_step_duration_seconds_bucket{{le=\"{}\"}}", le));
    CHECK(v >= last);
    last = v;
  }
  // /v1/models: the manifest, the voices a request may name, and the resources.
  const json m = get_json(srv.port, "/v1/models")["models"][0];
  CHECK(m["name"] == d.model.name);
  CHECK(m["kind"] == "tts");
  CHECK(m["voices"] == json{{"alice", {{"tokens", 48}}}, {"bob", {{"tokens", 80}}}});
  CHECK(m["architecture"] == d.model.arch->to_json());
  CHECK(m["resources"][0]["type"] == "bounded_kv");
  CHECK(m["resources"][0]["capacity"] == 8);
  CHECK(m["resources"][0]["bytes"].get<int64_t>() > 0);
  const json h = get_json(srv.port, "/v1/health");
  CHECK(h["status"] == "ok");
  CHECK(h["uptime_seconds"].get<double>() > 0);
}

TEST_CASE("serve: with an API key, a request without it gets 401 and nothing else, health stays open") {
  const auto d = test::shipped("tts-demo.yaml");
  serve::ServeOptions o;
  o.api_key = "s3cret-key";
  Running srv(d, o);
  httplib::Client c("127.0.0.1", srv.port);
  const std::string body = speech("k", "alice", {3}, 5).dump();
  const httplib::Headers none, wrong{{"Authorization", "Bearer s3cret-kez"}}, right{{"Authorization", "Bearer s3cret-key"}};
  const auto refused = [](const httplib::Result& r) {
    REQUIRE(r);
    CHECK(r->status == 401);
    CHECK(r->get_header_value("WWW-Authenticate") == "Bearer");
    CHECK(json::parse(r->body) == json{{"error", "this server wants its API key: Authorization: Bearer KEY"}});
  };
  for (const httplib::Headers& h : {none, wrong}) {
    for (const char* path : {"/v1/models", "/metrics", "/v1/nope", "/v1/generate"}) {
      CAPTURE(path);
      refused(c.Get(path, h));
    }
    refused(c.Post("/v1/generate", h, body, "application/json"));
    refused(c.Post("/v1/nope", h, body, "application/json"));
  }
  const auto health = c.Get("/v1/health");
  REQUIRE(health);
  CHECK(health->status == 200);
  // With the key: served, and the refused requests never reached the engine.
  const auto models = c.Get("/v1/models", right);
  REQUIRE(models);
  CHECK(models->status == 200);
  const auto generated = c.Post("/v1/generate", right, body, "application/json");
  REQUIRE(generated);
  CHECK(generated->status == 200);
  CHECK(generated->body.find(R"("event":"done")") != std::string::npos);
  const auto metrics = c.Get("/metrics", right);
  REQUIRE(metrics);
  CHECK(metric(metrics->body, R"(mstar_requests_total{outcome="done",reason="max_tokens"})") == 1);
  CHECK(metric(metrics->body, R"(mstar_http_responses_total{code="401"})") == 12);
}

namespace {

// A certificate authority and a server certificate for 127.0.0.1 it signed
// (P-256, made with the openssl program), in a directory of their own.
struct TestCertificates {
  std::filesystem::path dir = std::filesystem::temp_directory_path() / ("mstar-tls-" + std::to_string(::getpid()));
  std::filesystem::path ca = dir / "ca.pem", cert = dir / "server.pem", key = dir / "server.key";
  TestCertificates() {
    std::filesystem::create_directories(dir);
    const std::string d = dir.string();
    const std::string script =
        "cd '" + d + "' && printf 'subjectAltName=IP:127.0.0.1\\n' > ext && "
        "openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -keyout ca.key -out ca.pem -days 2 "
        "-subj '/CN=mstar test CA' && "
        "openssl req -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -keyout server.key -out server.csr "
        "-subj '/CN=127.0.0.1' && "
        "openssl x509 -req -in server.csr -CA ca.pem -CAkey ca.key -CAcreateserial -out server.pem -days 2 -extfile ext";
    REQUIRE(std::system(("(" + script + ") >/dev/null 2>&1").c_str()) == 0);
  }
  ~TestCertificates() { std::filesystem::remove_all(dir); }
};

}  // namespace

TEST_CASE("serve: with a certificate it speaks HTTPS only, to clients that trust its CA") {
  const TestCertificates certs;
  const auto d = test::shipped("tts-demo.yaml");
  serve::ServeOptions o;
  o.ssl_cert = certs.cert.string();
  o.ssl_key = certs.key.string();
  o.api_key = "over-tls";
  o.read_timeout_s = 1;
  Running srv(d, o);
  httplib::SSLClient c("127.0.0.1", srv.port);
  c.set_ca_cert_path(certs.ca.c_str());
  c.enable_server_certificate_verification(true);
  const httplib::Headers key{{"Authorization", "Bearer over-tls"}};
  const auto health = c.Get("/v1/health");
  REQUIRE(health);
  CHECK(health->status == 200);
  const auto refused = c.Get("/v1/models");
  REQUIRE(refused);
  CHECK(refused->status == 401);
  const auto generated = c.Post("/v1/generate", key, speech("t", "alice", {3}, 5).dump(), "application/json");
  REQUIRE(generated);
  CHECK(generated->status == 200);
  CHECK(generated->body.find(R"("event":"done","id":"t","reason":"max_tokens","tokens":5)") != std::string::npos);
  // A client hanging up mid-stream frees its slot, as over plain HTTP.
  int seen = 0;
  httplib::Request req;
  req.method = "POST";
  req.path = "/v1/generate";
  req.headers = key;
  req.headers.emplace("Content-Type", "application/json");
  req.body = speech("cut", "bob", {5}, 1 << 20).dump();
  req.content_receiver = [&](const char*, size_t, uint64_t, uint64_t) { return ++seen < 2; };
  const auto cut = c.send(req);
  CHECK(!cut);
  const auto in_use = [&] {
    const auto m = c.Get("/v1/models", key);
    return m ? json::parse(m->body)["models"][0]["resources"][0]["in_use"].get<int64_t>() : -1;
  };
  CHECK(eventually([&] { return in_use() == 0; }));
  // A client that does not trust the CA, or speaks plain HTTP, gets nothing.
  httplib::SSLClient untrusting("127.0.0.1", srv.port);
  untrusting.enable_server_certificate_verification(true);
  untrusting.set_ca_cert_path("/nonexistent-ca.pem");
  const auto no_trust = untrusting.Get("/v1/health");
  CHECK(!no_trust);
  httplib::Client plain("127.0.0.1", srv.port);
  plain.set_read_timeout(3, 0);
  const auto plain_reply = plain.Get("/v1/health");
  CHECK((!plain_reply || plain_reply->status != 200));
  // A connection that never starts its handshake is closed at the read timeout.
  Raw idle(srv.port);
  const auto t0 = std::chrono::steady_clock::now();
  CHECK(idle.read_until("never").empty());
  CHECK(std::chrono::steady_clock::now() - t0 < std::chrono::seconds(5));
  // The server still serves.
  const auto again = c.Get("/v1/health");
  REQUIRE(again);
  CHECK(again->status == 200);
}

TEST_CASE("serve: a certificate or key that does not do is refused before the model loads, naming the file") {
  const TestCertificates certs;
  const auto d = test::shipped("tts-demo.yaml");
  const auto refused = [&](const std::string& cert, const std::string& key) {
    serve::ServeOptions o;
    o.ssl_cert = cert;
    o.ssl_key = key;
    o.port = 0;
    serve::Server s(d, o);
  };
  const std::string cert = certs.cert.string(), key = certs.key.string(), ca_key = (certs.dir / "ca.key").string();
  CHECK_THROWS_WITH_AS(refused("/nonexistent.pem", key), "--ssl-cert /nonexistent.pem: no such file", InputError);
  CHECK_THROWS_WITH_AS(refused(cert, "/dev/zero"), "--ssl-key /dev/zero: is not a regular file", InputError);
  const std::string not_cert = "--ssl-cert " + key + ": not a PEM certificate chain",
                    not_key = "--ssl-key " + cert + ": not a PEM private key";
  CHECK_THROWS_WITH_AS(refused(key, key), doctest::Contains(not_cert.c_str()), InputError);
  CHECK_THROWS_WITH_AS(refused(cert, cert), doctest::Contains(not_key.c_str()), InputError);
  CHECK_THROWS_WITH_AS(refused(cert, ca_key),
                       ("--ssl-key " + ca_key + " is not the key of the certificate in --ssl-cert " + cert).c_str(),
                       InputError);
  CHECK_THROWS_WITH_AS(refused(cert, ""), "--ssl-cert and --ssl-key go together: HTTPS needs the certificate and its key",
                       ConfigError);
  serve::ServeOptions spaced;
  spaced.api_key = "two words";
  CHECK_THROWS_WITH_AS(serve::Server(d, spaced), doctest::Contains("ServeOptions::api_key: the API key holds byte 0x20"),
                       InputError);
}

TEST_CASE("serve: loopback addresses are told from the others") {
  for (const char* host : {"127.0.0.1", "127.1.2.3", "::1", "localhost"}) CHECK(serve::loopback_only(host));
  for (const char* host : {"0.0.0.0", "::", "192.168.1.7", "10.0.0.1", "example.org", ""}) CHECK_FALSE(serve::loopback_only(host));
}

TEST_CASE("serve: the engine thread sleeps while nothing runs") {
  const auto d = test::shipped("tts-demo.yaml");
  Running srv(d);
  post(srv.port, speech("w", "alice", {3}, 4));
  std::this_thread::sleep_for(std::chrono::milliseconds(300));  // the request done, the pool's idle workers asleep (they poll 200 us)
  auto cpu = [] {
    rusage u{};
    getrusage(RUSAGE_SELF, &u);
    return static_cast<double>(u.ru_utime.tv_sec + u.ru_stime.tv_sec) +
           1e-6 * static_cast<double>(u.ru_utime.tv_usec + u.ru_stime.tv_usec);
  };
  const double before = cpu();
  std::this_thread::sleep_for(std::chrono::milliseconds(500));
  CHECK(cpu() - before < 0.05);  // a thread spinning would use the whole 0.5 s
}

TEST_CASE("serve: a client that reads too slowly has its request cancelled, and nobody else notices") {
  const auto d = test::shipped("tts-demo.yaml");
  const json fast = sampled(speech("fast", "bob", {2, 3}, 64), 0.8, 30, 11);
  const auto want = expected(d, {fast});
  serve::LoopOptions options;
  options.max_queue = 8;
  options.stream_buffer = 3;
  serve::EngineLoop loop(d, options);
  serve::Opened slow = loop.open(speech("slow", "alice", {1}, 400));
  serve::Opened quick = loop.open(fast);
  REQUIRE(slow.status == 200);
  REQUIRE(quick.status == 200);
  CHECK(loop.decide(*slow.stream).status == 200);
  CHECK(loop.decide(*quick.stream).status == 200);
  std::vector<json> got;
  for (serve::Taken t; !t.end;) {
    t = loop.take(*quick.stream, std::chrono::milliseconds(50));
    for (auto& e : t.events) got.push_back(e);
  }
  CHECK(got == want.at("fast"));
  REQUIRE(eventually([&] { return loop.snapshot().running == 0; }));
  CHECK(loop.snapshot().resources[0].in_use == 0);
  const serve::Taken t = loop.take(*slow.stream, std::chrono::milliseconds(0));
  CHECK(t.end);
  REQUIRE(t.events.size() == 4);  // the buffer's three chunks, then the error
  for (int i = 0; i < 3; ++i) CHECK(t.events[static_cast<size_t>(i)]["event"] == "chunk");
  CHECK(t.events[3]["event"] == "error");
  CHECK(t.events[3]["message"] == "request 'slow': cancelled: the client read too slowly (3 events unread)");
  CHECK(loop.metrics_text().find("mstar_requests_total{outcome=\"cancelled\",cause=\"slow_reader\"} 1") != std::string::npos);
  loop.close(*slow.stream);
  loop.close(*quick.stream);
}

TEST_CASE("serve: an address that cannot be bound is an input error naming it") {
  const auto d = test::shipped("tts-demo.yaml");
  Running first(d);
  serve::ServeOptions o;
  o.port = first.port;
  serve::Server second(d, o);
  const std::string in_use_message = fmt::format("cannot listen on 127.0.0.1:{}: Address already in use", first.port);
  CHECK_THROWS_WITH_AS(second.start(), in_use_message.c_str(), InputError);
  o.host = "no-such-host.invalid";
  o.port = 0;
  serve::Server third(d, o);
  CHECK_THROWS_WITH_AS(third.start(), doctest::Contains("cannot listen on no-such-host.invalid:0"), InputError);
}

TEST_CASE("serve: shutdown cancels the running streams, or lets them finish within the drain time") {
  SUBCASE("cancel") {
    Running srv(test::shipped("tts-demo.yaml"));
    Streamed s;
    std::atomic<bool> started{false};
    std::thread client([&] { s = post(srv.port, speech("long", "alice", {3}, 1 << 24), false, [&](const json&) { return started = true; }); });
    REQUIRE(eventually([&] { return started.load(); }));
    const serve::ShutdownReport r = srv.server.stop();
    client.join();
    CHECK(r.open == 1);
    CHECK(r.cancelled == 1);
    CHECK(s.events.back()["event"] == "done");
    CHECK(s.events.back()["reason"] == "cancelled");
    CHECK(s.error == httplib::Error::Success);  // the stream ended properly, with its last event
    httplib::Client c("127.0.0.1", srv.port);
    CHECK(!c.Get("/v1/health"));  // nobody listens any more
  }
  SUBCASE("drain") {
    serve::ServeOptions o;
    o.drain_seconds = 30;
    Running srv(test::shipped("tts-demo.yaml"), o);
    Streamed s;
    std::atomic<bool> started{false};
    // 1,000 tokens (alice [1] meets the end token at 1,073): long enough to
    // be running when stop() comes, up to a poll of `eventually` after the
    // first event. 96 tokens, about 20 ms, were over first in 3 of 20 runs
    // beside a busy loop.
    std::thread client([&] { s = post(srv.port, speech("short", "alice", {1}, 1000), false, [&](const json&) { return started = true; }); });
    REQUIRE(eventually([&] { return started.load(); }));
    const serve::ShutdownReport r = srv.server.stop();
    client.join();
    CHECK(r.open == 1);
    CHECK(r.finished == 1);
    CHECK(r.cancelled == 0);
    CHECK(s.events.back()["reason"] == "max_tokens");
  }
}
