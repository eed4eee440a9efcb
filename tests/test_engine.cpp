// The Engine API: submit and cancel from other threads while one steps,
// every request ending in exactly one done or error event, ids refused
// alone, and idle time skipped.
#include <doctest/doctest.h>

#include <atomic>
#include <map>
#include <set>
#include <thread>

#include "deployments.h"
#include "engine/engine.h"
#include "engine/program.h"
#include "engine/run.h"

using namespace mstar;
using nlohmann::json;

namespace {

json speech(const std::string& id, int max_tokens, uint64_t seed) {
  return json{{"id", id}, {"voice", "alice"}, {"prompt", {5, 6, 7}}, {"max_tokens", max_tokens},
              {"sampling", {{"temperature", 0.9}, {"top_k", 20}, {"seed", seed}}}};
}

}  // namespace

TEST_CASE("engine: submit and cancel from a second thread while another steps, every request ends once") {
  auto engine =
      Engine::create(test::shipped("tts-demo.yaml", {"resources.voice_kv.max_slots=3", "workload.requests.count=0"}));
  constexpr int kRequests = 24;
  std::atomic<bool> submitted{false};
  std::thread client([&] {
    for (int i = 0; i < kRequests; ++i) {
      engine->submit(speech(fmt::format("r{}", i), 8 + i % 5, static_cast<uint64_t>(i)));
      if (i % 3 == 2) engine->cancel(fmt::format("r{}", i - 1));  // some still waiting, some running, some done
      std::this_thread::sleep_for(std::chrono::microseconds(200));
    }
    engine->submit(json{{"id", "bad"}, {"voice", "nobody"}, {"prompt", {1}}, {"max_tokens", 2}});
    submitted = true;
  });
  std::map<std::string, int> endings;
  std::map<std::string, std::string> reason;
  while (!submitted || !engine->idle())
    for (const Event& e : engine->step()) {
      const std::string id = e.body["id"];
      if (e.body["event"] == "done") ++endings[id], reason[id] = e.body["reason"];
      if (e.body["event"] == "error" && e.body["message"].get<std::string>().rfind("cancel:", 0) != 0) ++endings[id];
    }
  client.join();
  CHECK(endings.size() == kRequests + 1);
  for (const auto& [id, n] : endings) CHECK_MESSAGE(n == 1, id);
  CHECK(reason.count("bad") == 0);
  int cancelled = 0;
  for (const auto& [id, r] : reason) cancelled += r == "cancelled";
  CHECK(cancelled > 0);
  const RunStats s = engine->stats();
  CHECK(s.requests_done + s.requests_cancelled + s.requests_failed >= kRequests + 1);
  CHECK(s.resources[0].peak_in_use <= 3);
  CHECK(engine->resources().at(0).occupancy().in_use == 0);  // every slot came back
}

TEST_CASE("engine: a second request under a running id is refused alone") {
  auto engine = Engine::create(test::shipped("tts-demo.yaml", {"workload.requests.count=0"}));
  engine->submit(speech("a", 6, 1));
  engine->submit(speech("a", 6, 2));  // the same arrival: refused, the first goes on
  engine->submit(speech("b", 6, 3));
  std::map<std::string, std::vector<json>> by_id;
  while (!engine->idle())
    for (const Event& e : engine->step()) by_id[e.body["id"]].push_back(e.body);
  CHECK(by_id["a"].front()["event"] == "error");
  CHECK(by_id["a"].front()["message"] == "request 'a': a request with this id is already waiting or running");
  CHECK(by_id["a"].back()["reason"] == "max_tokens");
  CHECK(by_id["b"].back()["reason"] == "max_tokens");
  // And alone, the first request's events are what it produced beside the duplicate.
  auto alone = Engine::create(test::shipped("tts-demo.yaml", {"workload.requests.count=0"}));
  alone->submit(speech("a", 6, 1));
  std::vector<json> a;
  while (!alone->idle())
    for (const Event& e : alone->step()) a.push_back(e.body);
  std::vector<json> mine(by_id["a"].begin() + 1, by_id["a"].end());
  CHECK(mine == a);
}

TEST_CASE("engine: requests with no id, not objects, or rejected lines end in one error each") {
  auto engine = Engine::create(test::shipped("world-demo.yaml", {"workload.requests.count=0"}));
  engine->submit(json::array({1, 2}));
  engine->submit(json{{"frames", 2}});
  engine->reject("line 3", "line 3: not valid JSON");
  engine->cancel("ghost");
  const auto events = engine->step();
  REQUIRE(events.size() == 4);
  CHECK(events[0].body["message"] == "a request must be a JSON object, got [1,2]");
  CHECK(events[1].body["message"] == "a request needs a non-empty string 'id'");
  CHECK(events[2].body["id"] == "line 3");
  CHECK(events[3].body["message"] == "cancel: no waiting or running request 'ghost'");
  CHECK(engine->idle());
}

TEST_CASE("engine: a request arriving far in the future costs no idle steps") {
  auto engine = Engine::create(test::shipped("world-demo.yaml", {"workload.requests.count=0"}));
  std::vector<RequestLine> lines;
  lines.push_back(parse_request_line(json{{"id", "late"}, {"frames", 2}, {"arrival", INT32_MAX}}, "line 1"));
  const RunStats s = run_lines(*engine, std::move(lines), {}, [](const Event&) {});
  CHECK(s.requests_done == 1);
  CHECK(s.steps == 2);  // two frames, no walk through two billion idle steps
}
