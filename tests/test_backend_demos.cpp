// The shipped demos end to end on the backend under test (on_backend.h)
// against the cpu backend: the tts demo's greedy token streams equal, the
// world demo's frames within 1e-3 (f32 sums in another order). In the test
// suite "against the cpu backend", which the cpu backend's own run leaves
// out (tests/CMakeLists.txt): there it would only compare the cpu with
// itself.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "deployments.h"
#include "engine/engine.h"
#include "on_backend.h"

using namespace mstar;

namespace {

std::string under_test() { return std::string(to_string(test::backend_under_test())); }

std::vector<Event> run_all(Engine& e) {
  std::vector<Event> out;
  while (!e.idle())
    for (Event& ev : e.step()) out.push_back(std::move(ev));
  return out;
}

}  // namespace

TEST_SUITE_BEGIN("against the cpu backend");

TEST_CASE("the tts demo's greedy token streams equal the cpu backend's") {
  std::map<std::string, std::map<std::string, std::vector<int32_t>>> streams;  // backend -> id -> tokens
  for (const std::string& backend : std::vector<std::string>{"cpu", under_test()}) {
    auto engine = Engine::create(test::shipped("tts-demo.yaml", {"backend=" + backend, "workload.requests.count=0"}));
    for (int i = 0; i < 6; ++i)
      engine->submit(nlohmann::json{{"id", fmt::format("g{}", i)},
                                    {"voice", i % 2 ? "bob" : "alice"},
                                    {"prompt", {5 + i, 6, 7 + 3 * i, 11}},
                                    {"max_tokens", 40 + 4 * i},
                                    {"sampling", {{"temperature", 0.0}}}});
    streams[backend] = test::streamed_tokens(*engine);
  }
  REQUIRE(streams["cpu"].size() == 6);
  for (const auto& [id, tokens] : streams["cpu"]) {
    CAPTURE(id);
    CHECK(!tokens.empty());
    CHECK(streams[under_test()][id] == tokens);
  }
}

TEST_CASE("the world demo's frames match the cpu backend's mean and std within 1e-3") {
  std::map<std::string, std::map<std::pair<std::string, int64_t>, std::pair<double, double>>> frames;
  for (const std::string& backend : std::vector<std::string>{"cpu", under_test()}) {
    auto engine = Engine::create(test::shipped("world-demo.yaml", {"backend=" + backend, "workload.requests.count=0"}));
    for (int i = 0; i < 2; ++i)
      engine->submit(nlohmann::json{{"id", fmt::format("w{}", i)}, {"frames", 4}, {"seed", 10 + i}});
    for (const Event& e : run_all(*engine)) {
      INFO(e.body.dump());
      REQUIRE(e.body["event"] != "error");
      if (e.body["event"] == "frame")
        frames[backend][{e.body["id"].get<std::string>(), e.body["frame"].get<int64_t>()}] = {
            e.body["mean"].get<double>(), e.body["std"].get<double>()};
    }
  }
  REQUIRE(frames["cpu"].size() == 8);
  REQUIRE(frames[under_test()].size() == 8);
  for (const auto& [key, ms] : frames["cpu"]) {
    CAPTURE(key.first);
    CAPTURE(key.second);
    const auto [mean, sd] = frames[under_test()][key];
    CHECK(std::fabs(mean - ms.first) <= 1e-3 * std::max(std::fabs(ms.first), sd) + 1e-6);
    CHECK(std::fabs(sd - ms.second) <= 1e-3 * std::fabs(ms.second) + 1e-6);
  }
}

TEST_SUITE_END();
