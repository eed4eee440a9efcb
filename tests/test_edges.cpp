// The edges a user meets first: a model whose vocabulary is larger than its
// tokenizer's (real Qwen2.5 checkpoints: 151,936 rows, about 151,665
// tokens) draws ids the tokenizer cannot spell (they decode to nothing, no
// stream fails for one, and mstar-check states the gap); JSON with a NUL
// byte; request lines without an id; stats that say what they measure.
#include <doctest/doctest.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <map>
#include <sstream>
#include <string>

#include <fmt/format.h>

#include "bench/svg.h"
#include "config/memory_plan.h"
#include "core/json_text.h"
#include "core/progress.h"
#include "engine/engine.h"
#include "engine/run.h"
#include "deployments.h"
#include "temp_dir.h"

using namespace mstar;
using nlohmann::json;

namespace {

// A tts model of 8,000 ids over a tokenizer of 4,071 (tests/data/tokenizer/llama3-mini).
std::string manifest() {
  const std::string tokenizer =
      (std::filesystem::path(MSTAR_TEST_DATA) / "tokenizer" / "llama3-mini" / "tokenizer.json").string();
  return R"(name: wide
kind: tts
architecture: {layers: 1, width: 32, heads: 2, kv_heads: 1, head_dim: 16, mlp_width: 32, vocab_size: 8000, end_token: 7999}
weights: {dummy_seed: 5}
tokenizer: )" + tokenizer + R"(
resources:
  - resource_key: voice_kv
    type: bounded_kv
    nodes: attn.*
    config: {rows_per_request: 1, max_source_len: 16, retention: {sink: 2, window: 30}, max_slots: 4}
)";
}

ResolvedDeployment wide(const test::TempDir& dir) {
  dir.write("m.yaml", manifest());
  dir.write("c.yaml", "model: m.yaml\nbackend: cpu\nworkload:\n  voices:\n    alice: {seed: 1, length: 4}\n"
                      "  requests: {count: 0, voices: [alice], prompt_tokens: 2, max_tokens: 2}\n");
  return test::load_or_fail(dir.path / "c.yaml");
}

}  // namespace

TEST_CASE("ids a model draws beyond its tokenizer decode to nothing: every stream ends, none fails") {
  test::TempDir dir;
  auto engine = Engine::create(wide(dir));
  for (int i = 0; i < 4; ++i)
    engine->submit(json{{"id", std::to_string(i)}, {"voice", "alice"}, {"text", "hello world"}, {"max_tokens", 40},
                        {"sampling", {{"temperature", 1.0}, {"seed", i}}}});
  std::map<std::string, int> done;
  int beyond = 0;  // drawn ids the tokenizer cannot spell
  while (!engine->idle())
    for (const Event& e : engine->step()) {
      REQUIRE_MESSAGE(e.body["event"] != "error", e.body.dump());
      if (e.body["event"] == "chunk")
        for (int32_t t : e.body["tokens"]) beyond += t >= 4071;
      if (e.body["event"] == "done") ++done[e.body["id"]];
    }
  CHECK(done.size() == 4);
  CHECK(beyond > 0);  // about half of uniform-ish draws over 8,000 ids: the case happened
}

TEST_CASE("mstar-check's plan states how many ids the tokenizer cannot spell") {
  test::TempDir dir;
  const json plan = memory_plan_json(wide(dir));
  CHECK(plan["model"]["tokenizer"]["unspellable_ids"] == 8000 - 4071);
  CHECK(memory_plan_text(plan).find("the model's vocabulary has 3929 ids more than the tokenizer (4071 to 7999): they "
                                    "decode to nothing") != std::string::npos);
}

TEST_CASE("mstar-check's plan says a checkpoint's values are checked when mstar-run loads them, and a dummy's are not read") {
  const ResolvedDeployment hf = test::shipped("hf-demo.yaml");
  const json plan = memory_plan_json(hf);
  CHECK(plan["model"]["weights"]["values"] == "checked when loaded");
  CHECK(memory_plan_text(plan).find("values: checked when mstar-run loads them (a NaN or an infinity is refused then") !=
        std::string::npos);
  const json dummy = memory_plan_json(test::shipped("tts-demo.yaml"));
  CHECK_FALSE(dummy["model"]["weights"].contains("values"));
  CHECK(memory_plan_text(dummy).find("values: checked") == std::string::npos);
}

TEST_CASE("progress: one line redrawn as the percent changes and ended at the total, and a checkpoint's load reports every byte") {
  std::FILE* f = std::tmpfile();
  REQUIRE(f);
  const Progress p = line_progress(f);
  for (int64_t done : {0, 1, 100, 101, 200}) p("loading weights", done, 200);
  std::rewind(f);
  std::string drawn(256, '\0');
  drawn.resize(std::fread(drawn.data(), 1, drawn.size(), f));
  std::fclose(f);
  CHECK(drawn == "\rloading weights: 0%\rloading weights: 50%\rloading weights: 100%\n");
  CHECK(progress_text("stream", 3, 0) == "stream: 100%");

  const ResolvedDeployment hf = test::shipped("hf-demo.yaml");
  std::vector<int64_t> done;
  int64_t total = 0;
  const Weights w = hf.model.load_weights(Backend::cpu, [&](std::string_view what, int64_t d, int64_t t) {
    CHECK(what == "loading weights");
    done.push_back(d);
    total = t;
  });
  REQUIRE(done.size() == hf.model.arch->tensors().size());  // one report per tensor
  CHECK(std::is_sorted(done.begin(), done.end()));
  CHECK(done.back() == total);
  CHECK(static_cast<std::size_t>(total) == hf.model.weights_bytes);
}

namespace {

// The number after `key="` at or after `from`.
double svg_number(const std::string& svg, const std::string& key, std::size_t from = 0) {
  const std::size_t at = svg.find(key + "=\"", from);
  REQUIRE(at != std::string::npos);
  return std::stod(svg.substr(at + key.size() + 2));
}

}  // namespace

TEST_CASE("charts: a bar's label stays inside the picture, and two charts side by side leave no blank half") {
  // Bars up to 14.6 times the reference: the longest bar's label, "1461%",
  // ends inside the width (11 px sans-serif: at most 7 px a character).
  const std::string bars =
      bench::bar_chart("t", "x", {{"decode cpu hot bf16 b1 300", 14.61}, {"decode reference cold bf16 b1 300", 0.17}});
  const double width = svg_number(bars, "width");
  const std::size_t label = bars.find(">1461%<");
  REQUIRE(label != std::string::npos);
  const double x = svg_number(bars, "x", bars.rfind("<text", label));
  CHECK(x + 7 * 5 <= width);
  // Two line charts: as wide as both, as tall as one.
  const bench::Series s{"a", "#000", {1, 2, 3}, {1, 2, 3}};
  const std::string one = bench::line_chart("l", "x", "y", {s}, false);
  const std::string both = bench::side_by_side(one, one);
  CHECK(svg_number(both, "width") == 2 * svg_number(one, "width"));
  CHECK(svg_number(both, "height") == svg_number(one, "height"));
}

TEST_CASE("JSON with a NUL byte is refused where it stands, not read up to it") {
  std::string why;
  const std::string text = std::string("{\"id\": \"a\"}") + '\0' + "{\"id\": \"b\"}";
  CHECK(!try_parse_json(text, why, 32));
  CHECK(why == "not valid JSON: a NUL byte at line 1, column 12");
  const std::string in_string = std::string("{\"id\": \"a") + '\0' + "\"}";
  CHECK(!try_parse_json(in_string, why, 32));
  CHECK(why == "not valid JSON: a NUL byte at line 1, column 10");
  CHECK(try_parse_json("{\"id\": \"a\\u0000\"}", why, 32));  // an escaped one is a character like any other
}

TEST_CASE("a request line without a usable id fails under its line number") {
  std::istringstream in(R"({"id": "a", "voice": "alice", "prompt": [1], "max_tokens": 2}
{"voice": "alice", "prompt": [1], "max_tokens": 2}
{"id": 5, "voice": "alice", "prompt": [1], "max_tokens": 2}
)");
  const auto lines = read_request_lines(in, "requests");
  REQUIRE(lines.size() == 3);
  CHECK(lines[0].kind == RequestLine::Kind::request);
  for (size_t i : {1u, 2u}) {
    CHECK(lines[i].kind == RequestLine::Kind::reject);
    CHECK(lines[i].id == fmt::format("line {}", i + 1));
    CHECK(lines[i].message == fmt::format("line {}: a request needs a non-empty string 'id'", i + 1));
  }
}

TEST_CASE("run stats: loading apart from serving, the first token apart from the first chunk") {
  // 8-token chunks: a stream's first chunk waits for its eighth token.
  auto engine = Engine::create(
      test::shipped("tts-demo.yaml", {"workload.requests.count=0", "workload.chunk_tokens=8", "threads=1"}));
  for (int i = 0; i < 3; ++i)
    engine->submit(json{{"id", std::to_string(i)}, {"voice", "alice"}, {"prompt", {1, 2}}, {"max_tokens", 16}});
  while (!engine->idle()) (void)engine->step();
  const RunStats s = engine->stats();
  CHECK(s.load_seconds > 0);
  CHECK(s.first_output_ms.count() == 3);
  CHECK(s.first_chunk_ms.count() == 3);
  // Each stream's first chunk went out seven steps after its first token.
  for (size_t i = 0; i < 3; ++i) CHECK(s.first_chunk_ms.kept()[i] > s.first_output_ms.kept()[i]);
  const std::string table = s.table();
  for (const char* line : {"load ", "time to first token", "time to first chunk", "after load"})
    CHECK_MESSAGE(table.find(line) != std::string::npos, table);
}
