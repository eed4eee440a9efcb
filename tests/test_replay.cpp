// Golden traces: each tests/data/NAME.json with a NAME.expected.json beside it
// is replayed on both backends and compared with outputs that were derived
// independently of mstar (by hand, or by make_random_trace.py's own naive
// implementation).
#include <doctest/doctest.h>

#include <cmath>
#include <fstream>

#include "core/errors.h"
#include "engine/replay.h"
#include "backends.h"

using namespace mstar;
using nlohmann::json;

namespace {

json load(const std::string& name) {
  std::ifstream in(std::string(MSTAR_TEST_DATA) + "/" + name);
  REQUIRE_MESSAGE(in.good(), "missing test data " << name);
  return json::parse(in);
}

// Largest difference between two nested arrays of numbers of the same shape.
double max_diff(const json& a, const json& b) {
  if (a.is_number() && b.is_number()) return std::fabs(a.get<double>() - b.get<double>());
  if (!a.is_array() || !b.is_array() || a.size() != b.size()) return INFINITY;
  double m = 0;
  for (size_t i = 0; i < a.size(); ++i) m = std::max(m, max_diff(a[i], b[i]));
  return m;
}

// Rows match in request (and session and frame, where given) and in output,
// where the expected file has one (padding rows' outputs are not specified).
void check_rows(const json& got, const json& want, double tol) {
  REQUIRE(got.size() == want.size());
  for (size_t r = 0; r < want.size(); ++r) {
    CAPTURE(r);
    for (const char* key : {"request", "session", "frame"})
      if (want[r].contains(key)) CHECK(got[r][key] == want[r][key]);
    if (want[r].contains("out") && !want[r]["request"].get<std::string>().empty())
      CHECK(max_diff(got[r]["out"], want[r]["out"]) <= tol);
  }
}

void check_golden(const std::string& name, double tol) {
  const json trace = load(name + ".json"), want = load(name + ".expected.json");
  for (Backend b : test::host_backends()) {
    CAPTURE(name);
    CAPTURE(to_string(b));
    const json got = replay_trace(trace, ReplayOptions{b, 2});
    REQUIRE(got["steps"].size() == want["steps"].size());
    for (size_t s = 0; s < want["steps"].size(); ++s) {
      CAPTURE(s);
      const json& w = want["steps"][s];
      const json& g = got["steps"][s];
      CHECK(g["admit"] == w["admit"]);
      if (!w.contains("rows")) {
        CHECK(!g.contains("rows"));
        continue;
      }
      check_rows(g["rows"], w["rows"], tol);
    }
  }
}

void check_ring_golden(const std::string& name, double tol) {
  const json trace = load(name + ".json"), want = load(name + ".expected.json");
  for (Backend b : test::host_backends()) {
    CAPTURE(to_string(b));
    const json got = replay_trace(trace, ReplayOptions{b, 2});
    REQUIRE(got["steps"].size() == want["steps"].size());
    for (size_t s = 0; s < want["steps"].size(); ++s) {
      CAPTURE(s);
      const json& w = want["steps"][s];
      const json& g = got["steps"][s];
      CHECK(g["admit"] == w["admit"]);
      if (!w.contains("passes")) {
        CHECK(!g.contains("passes"));
        continue;
      }
      REQUIRE(g["passes"].size() == w["passes"].size());
      for (size_t p = 0; p < w["passes"].size(); ++p) {
        CHECK(g["passes"][p]["commit"] == w["passes"][p]["commit"]);
        check_rows(g["passes"][p]["rows"], w["passes"][p]["rows"], tol);
      }
    }
  }
}

}  // namespace

TEST_CASE("golden trace: StreamingLLM retention as means of positions (derived by hand)") {
  check_golden("streaming_llm_means", 1e-5);
}

TEST_CASE("golden trace: GQA, f16 storage, two rows per request, causal steps (independent implementation)") {
  check_golden("random_gqa_f16", 1e-4);
}

TEST_CASE("golden trace: ring rollouts with denoising passes, padding and refusals (independent implementation)") {
  check_ring_golden("ring_rollout_f16", 1e-4);
}

TEST_CASE("a malformed trace is refused with the place named") {
  json trace = load("streaming_llm_means.json");
  trace["steps"][0]["rows"][0]["v"] = json::array({json::array({json::array({json::array({3.0})})})});
  CHECK_THROWS_WITH_AS(replay_trace(trace, {}), "trace steps[0].rows[0].v: has 1 tokens but the row's span is 2",
                       InputError);
}
