// The scheduler through the Engine on the shipped demo deployments, cut down
// with --set overrides and given explicit requests.
#include <doctest/doctest.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>

#include <thread>

#include "config/deployment.h"
#include "deployments.h"
#include "engine/engine.h"
#include "engine/program.h"
#include "engine/run.h"
#include "engine/workload.h"

using namespace mstar;
using nlohmann::json;

namespace {

struct Run {
  RunStats stats;
  std::vector<json> events;
  // Every event of one request, in order.
  std::vector<json> of(const std::string& id) const {
    std::vector<json> out;
    for (const auto& e : events)
      if (e["id"] == id) out.push_back(e);
    if (out.empty()) out.push_back(json{{"missing", id}});  // fails the checks instead of crashing them
    return out;
  }
};

Run run(const ResolvedDeployment& d, const std::string& lines) {
  std::istringstream in(lines);
  auto engine = Engine::create(d);
  Run r;
  r.stats = run_lines(*engine, read_request_lines(in), {}, [&](const Event& e) { r.events.push_back(e.body); });
  return r;
}

std::vector<json> run_workload(const ResolvedDeployment& d) {
  auto engine = Engine::create(d);
  std::vector<json> events;
  run_lines(*engine, *workload_lines(d), {}, [&](const Event& e) { events.push_back(e.body); });
  return events;
}

std::string tts_req(const std::string& id, const std::string& voice, int arrival, int max_tokens = 12,
                    const std::string& extra = "") {
  // One request per line: the JSON-lines format.
  return fmt::format(R"({{"id": "{}", "voice": "{}", "prompt": [5, 6, 7], "max_tokens": {}, "arrival": {}, )"
                     R"("sampling": {{"temperature": 0.9, "top_k": 20, "seed": 3{}}}}})",
                     id, voice, max_tokens, arrival, extra) +
         "\n";
}

}  // namespace

TEST_CASE("scheduler: admission waits for a free slot, then proceeds, first come first served") {
  const auto d = test::shipped("tts-demo.yaml", {"resources.voice_kv.max_slots=2"});
  std::string lines;
  for (int i = 0; i < 5; ++i) lines += tts_req(fmt::format("r{}", i), i % 2 ? "bob" : "alice", 0);
  const Run r = run(d, lines);
  CHECK(r.stats.requests_done == 5);
  CHECK(r.stats.admission_waits > 0);
  CHECK(r.stats.resources[0].peak_in_use == 2);
  // First come, first served: requests finish in arrival order, two at a time.
  std::vector<std::string> done;
  for (const auto& e : r.events)
    if (e["event"] == "done") done.push_back(e["id"]);
  CHECK(done == std::vector<std::string>{"r0", "r1", "r2", "r3", "r4"});
}

TEST_CASE("scheduler: failing requests leave the others' outputs identical") {
  const auto d = test::shipped("tts-demo.yaml", {"resources.voice_kv.max_slots=3"});
  const std::string good = tts_req("a", "alice", 0) + tts_req("b", "bob", 1);
  const Run clean = run(d, good);
  const std::string bad =
      tts_req("x1", "carol", 0) +                                                   // unknown voice
      R"({"id": "x2", "voice": "alice", "prompt": [], "max_tokens": 5})" "\n" +      // empty prompt
      tts_req("x3", "alice", 0, 5, R"(, "top_p": 7)") +                             // nonsense sampling
      "{not json\n" +                                                               // malformed line
      R"({"id": "x5", "voice": "bob", "prompt": [1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20, 21, 22, 23, 24, 25, 26, 27, 28, 29, 30, 31, 32, 33, 34, 35, 36, 37, 38, 39, 40, 41, 42, 43, 44, 45, 46, 47, 48, 49, 50, 51, 52, 53, 54, 55, 56, 57, 58, 59, 60, 61, 62, 63, 64, 65], "max_tokens": 5})" "\n";
  const Run mixed = run(d, tts_req("a", "alice", 0) + bad + tts_req("b", "bob", 1));
  CHECK(mixed.of("a") == clean.of("a"));
  CHECK(mixed.of("b") == clean.of("b"));
  CHECK(mixed.stats.requests_done == 2);
  CHECK(mixed.stats.requests_failed == 5);
  CHECK(mixed.of("x1")[0]["message"] == "request 'x1': unknown voice 'carol' (voices: alice, bob)");
  CHECK(mixed.of("x2")[0]["message"] == "request 'x2': the prompt is empty; it needs at least one token");
  CHECK(mixed.of("x3")[0]["message"] == "request 'x3' sampling: top_p must be in (0, 1], got 7");
  CHECK(mixed.of("line 5")[0]["message"].get<std::string>().find("line 5: not valid JSON: parse error at line 1, column 3") == 0);
  CHECK(mixed.of("x5")[0]["message"] == "request 'x5': the prompt has 65 tokens; one step writes at most 64 (query_window)");
}

TEST_CASE("scheduler: a voice longer than the slots hold is refused with the deployment, as mstar-check refuses it") {
  Diagnostics d;
  const auto r = load_deployment(std::string(MSTAR_SOURCE_DIR) + "/configs/tts-demo.yaml",
                                 {parse_set("workload.voices.bob.length=200")}, d);
  CHECK(!r);
  CHECK(d.str().find("workload.voices.bob: 200 prompt tokens; the model's slots take sources of 1 to 128") !=
        std::string::npos);
}

TEST_CASE("scheduler: cancellation frees the slot at once") {
  const auto d = test::shipped("tts-demo.yaml", {"resources.voice_kv.max_slots=1"});
  const Run r = run(d, tts_req("long", "alice", 0, 1000) + tts_req("next", "bob", 0, 4) +
                           R"({"cancel": "long", "arrival": 5})" "\n");
  CHECK(r.stats.requests_cancelled == 1);
  CHECK(r.stats.requests_done == 1);
  const auto longs = r.of("long");
  CHECK(longs.back()["reason"] == "cancelled");
  CHECK(r.of("next").back()["reason"] == "max_tokens");
  // The waiting request ran only after the cancellation released the slot.
  size_t cancelled_at = 0, next_first = 0;
  for (size_t i = 0; i < r.events.size(); ++i) {
    if (r.events[i]["id"] == "long" && r.events[i]["event"] == "done") cancelled_at = i;
    if (r.events[i]["id"] == "next" && next_first == 0) next_first = i;
  }
  CHECK(next_first > cancelled_at);
}

TEST_CASE("scheduler: runs are reproducible from their seeds") {
  const auto d = test::shipped("tts-demo.yaml", {"workload.requests.count=3", "workload.requests.max_tokens=20"});
  CHECK(run_workload(d) == run_workload(d));
  const auto d2 = test::shipped("tts-demo.yaml", {"workload.requests.count=3", "workload.requests.max_tokens=20",
                                               "workload.requests.seed=2"});
  CHECK(run_workload(d) != run_workload(d2));
}

TEST_CASE("scheduler: the workload's requests, made as they arrive, run as the same request lines would") {
  // docs/running.md's generator: request i is "req{i:03}", arrives at
  // i * arrival_every, takes the voices in turn, a prompt of seeded tokens
  // ((seed + i) * 7919) and sampling seed seed + i.
  const auto d = test::shipped("tts-demo.yaml", {"workload.requests.count=3", "workload.requests.max_tokens=20",
                                              "workload.requests.seed=5", "workload.requests.arrival_every=3"});
  const char* voices[] = {"alice", "bob", "alice"};
  std::string lines;
  for (int i = 0; i < 3; ++i)
    lines += fmt::format(R"({{"id": "req00{}", "voice": "{}", "prompt": {}, "max_tokens": 20, "arrival": {}, )"
                         R"("sampling": {{"temperature": 0.8, "top_k": 50, "top_p": 0.95, "seed": {}}}}})"
                         "\n",
                         i, voices[i], json(seeded_tokens(static_cast<uint64_t>(5 + i) * 7919u, 12, 1024)).dump(),
                         3 * i, 5 + i);
  const std::vector<json> events = run_workload(d);
  CHECK(events.size() >= 9);  // at least a chunk and a done each
  CHECK(run(d, lines).events == events);

  // 100,000 requests are a count, not 100,000 objects, until they arrive.
  const auto big = test::shipped("world-demo.yaml", {"workload.requests.count=100000"});
  CHECK(big.deployment.workload.dump().size() < 200);
  auto source = workload_lines(big);
  int64_t taken = 0;
  RequestLine last;
  for (; source->next_arrival(); ++taken) last = source->take();
  CHECK(taken == 100000);
  CHECK(last.id == "roll99999");
  CHECK(last.arrival == 99999 * big.deployment.workload["requests"]["arrival_every"].get<int64_t>());
}

TEST_CASE("scheduler: the batch's draws spread over two threads speak as one thread drawing them in turn") {
  // Every stream draws from its own logits with its own generator, so the
  // pool's order of draws must not show; the cpu backend's products and
  // attention also give the same sums on 1 and 2 threads (split by output
  // column and by head, never inside a sum), so whole runs compare.
  const std::vector<std::string> sets{"workload.requests.count=6", "workload.requests.max_tokens=24",
                                      "workload.requests.arrival_every=0"};
  std::vector<std::string> one = sets, two = sets;
  one.push_back("threads=1");
  two.push_back("threads=2");
  const std::vector<json> serial = run_workload(test::shipped("tts-demo.yaml", one));
  CHECK(serial.size() > 12);
  CHECK(run_workload(test::shipped("tts-demo.yaml", two)) == serial);
  CHECK(run_workload(test::shipped("hf-demo.yaml", two)) == run_workload(test::shipped("hf-demo.yaml", one)));
}

TEST_CASE("scheduler: world rollouts wait for sessions, stream frames, and fail alone") {
  const auto d = test::shipped("world-demo.yaml", {"resources.world_kv.num_sessions=1"});
  const Run r = run(d, R"({"id": "w1", "frames": 3, "seed": 1})" "\n"
                       R"({"id": "w2", "frames": 2, "seed": 2})" "\n"
                       R"({"id": "w3", "frames": 0})" "\n"
                       R"({"id": "w4", "frames": 2, "controls": [[1, 2]]})" "\n");
  CHECK(r.stats.requests_done == 2);
  CHECK(r.stats.admission_waits > 0);
  CHECK(r.of("w1").size() == 4);  // three frames and done
  CHECK(r.of("w1")[0]["shape"] == json::array({64, 16}));
  CHECK(r.of("w3")[0]["message"] == "request 'w3': 'frames' must be in [1, 16777216], got 0");
  CHECK(r.of("w4")[0]["message"] == "request 'w4': controls[0] must hold 4 numbers");
  // Frames are reproducible: the same seed gives the same checksums alone.
  const Run alone = run(d, R"({"id": "w1", "frames": 3, "seed": 1})" "\n");
  CHECK(alone.of("w1") == r.of("w1"));
}

TEST_CASE("scheduler: classifier-free guidance rows, scale 1 speaks exactly as the conditional row alone") {
  namespace fs = std::filesystem;
  const fs::path dir = fs::temp_directory_path() / fmt::format("mstar-cfg-test-{}", ::getpid());
  fs::create_directories(dir);
  std::ifstream in(std::string(MSTAR_SOURCE_DIR) + "/models/tiny-tts.yaml");
  std::string manifest((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  manifest.replace(manifest.find("rows_per_request: 1"), 19, "rows_per_request: 2");
  std::ofstream(dir / "cfg-tts.yaml") << manifest;
  auto config = [&](const std::string& model, double scale) {
    std::ofstream(dir / "c.yaml") << "model: " << model << "\nbackend: cpu\nthreads: 2\nworkload:\n  guidance_scale: " << scale
                                  << "\n  voices:\n    alice: {seed: 1, length: 20}\n";
    Diagnostics d;
    auto r = load_deployment(dir / "c.yaml", {}, d);
    REQUIRE_MESSAGE(r, d.str());
    return *r;
  };
  const std::string req = tts_req("a", "alice", 0, 16) + tts_req("b", "alice", 1, 16);
  const Run plain = run(config(std::string(MSTAR_SOURCE_DIR) + "/models/tiny-tts.yaml", 1.0), req);
  const Run guided1 = run(config("cfg-tts.yaml", 1.0), req);
  const Run guided3 = run(config("cfg-tts.yaml", 3.0), req);
  CHECK(guided1.stats.requests_done == 2);
  CHECK(guided1.of("a") == plain.of("a"));  // uncond + 1 * (cond - uncond) = cond
  CHECK(guided1.of("b") == plain.of("b"));
  CHECK(guided3.of("a") != plain.of("a"));
  fs::remove_all(dir);
}
