// Hostile and careless input, one class of defect at a time (issue 12): each
// case is what a user could do, and what mstar must do instead of crashing,
// harming other requests, writing outside its directory, reading forever,
// losing output, wrapping a number or running out of memory.
#include <doctest/doctest.h>

#include <sys/wait.h>
#include <unistd.h>

#include <cmath>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <limits>
#include <memory>
#include <set>
#include <sstream>

#include "bench/engine_bench.h"
#include "bench/kernels.h"
#include "bench/soak.h"
#include "resources/bounded_kv/json.h"
#include "config/yaml_source.h"
#include "core/checked.h"
#include "core/files.h"
#include "core/heap.h"
#include "core/json_text.h"
#include "engine/engine.h"
#include "engine/program.h"
#include "engine/replay.h"
#include "engine/requests.h"
#include "engine/run.h"
#include "engine/stats.h"
#include "models/safetensors.h"
#include "models/weights.h"
#include "temp_dir.h"

using namespace mstar;
using nlohmann::json;
namespace fs = std::filesystem;

namespace {

using test::TempDir;

void spill(const fs::path& p, const std::string& s) { std::ofstream(p, std::ios::binary) << s; }
std::string slurp(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}

fs::path source(const std::string& rel) { return fs::path(MSTAR_SOURCE_DIR) / rel; }

std::optional<ResolvedDeployment> try_load(const fs::path& config, const std::vector<std::string>& sets,
                                            std::string& diags) {
  Diagnostics d;
  std::vector<SetOverride> so;
  for (const auto& s : sets) so.push_back(parse_set(s));
  auto r = load_deployment(config, so, d);
  diags = d.str();
  return r;
}

ResolvedDeployment load(const std::string& config, const std::vector<std::string>& sets) {
  std::string diags;
  auto r = try_load(source("configs/" + config), sets, diags);
  REQUIRE_MESSAGE(r, diags);
  return *r;
}

// The diagnostics of a deployment that must be refused.
std::string refused(const std::string& config, const std::vector<std::string>& sets) {
  std::string diags;
  const auto r = try_load(source("configs/" + config), sets, diags);
  CHECK_MESSAGE(!r, "accepted: ", fmt::format("{}", fmt::join(sets, " ")));
  return diags;
}

template <class F>
std::string what_of(F&& f) {
  try {
    f();
  } catch (const std::exception& e) {
    return e.what();
  }
  return "";
}

std::vector<json> run(const ResolvedDeployment& d, const std::string& lines) {
  auto engine = Engine::create(d);
  std::istringstream in(lines);
  std::vector<json> events;
  run_lines(*engine, read_request_lines(in), {}, [&](const Event& e) { events.push_back(e.body); });
  return events;
}

std::vector<json> of(const std::vector<json>& events, const std::string& id) {
  std::vector<json> out;
  for (const json& e : events)
    if (e["id"] == id) out.push_back(e);
  return out;
}

std::string nested(int depth) { return std::string(static_cast<size_t>(depth), '[') + std::string(static_cast<size_t>(depth), ']'); }

struct Ran {
  int rc = -1;
  std::string out, err;
};
// Runs a shell command, capturing its exit code and both streams.
Ran sh(const std::string& cmd) {
  TempDir dir;
  const int status = std::system(fmt::format("{} >{} 2>{}", cmd, dir / "out", dir / "err").c_str());
  return {WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status), slurp(dir / "out"), slurp(dir / "err")};
}

}  // namespace

// --- Crashes ----------------------------------------------------------------

TEST_CASE("reliability: JSON nested 100k deep is refused before it is built, wherever it comes from") {
  CHECK(json_too_deep(nested(64)) == std::nullopt);
  CHECK(json_too_deep(nested(65)) == std::optional<size_t>(64));
  CHECK(json_too_deep("[\"[[[[[[[[[[\\\"[[[[\"]", 2) == std::nullopt);  // brackets in strings do not nest
  CHECK(what_of([] { parse_json(nested(100000), "trace.json"); }) ==
        "trace.json: nests deeper than 64 levels (line 1, column 65)");
  // A request line, deep anywhere (in controls, say), fails alone.
  const auto d = load("world-demo.yaml", {"workload.requests.count=0"});
  const std::string deep = R"({"id": "deep", "frames": 2, "controls": )" + nested(100000) + "}\n";
  const auto events = run(d, deep + R"({"id": "ok", "frames": 2})" "\n");
  CHECK(of(events, "line 1")[0]["message"].get<std::string>().find("line 1: nests deeper than 64 levels (line 1, column ") == 0);
  CHECK(of(events, "ok").back()["reason"] == "frames");
  // A snapshot header is parsed the same way (test_snapshot.cpp checks the file around it).
}

TEST_CASE("reliability: mstar-check --json prints a config path that is not UTF-8 instead of aborting") {
  TempDir dir;
  std::string config = slurp(source("configs/tts-demo.yaml"));
  config.replace(config.find("../models/"), 10, source("models").string() + "/");
  const std::string name = dir / "bad-\xff\xfe.yaml";
  spill(name, config);
  const Ran r = sh(fmt::format("{} --json '{}'", MSTAR_CHECK_BIN, name));
  CHECK_MESSAGE(r.rc == 0, r.err);
  CHECK(r.out.find("bad-\xef\xbf\xbd\xef\xbf\xbd.yaml") != std::string::npos);  // each byte a U+FFFD
  CHECK(dump_json(json("a\xff")) == "\"a\xef\xbf\xbd\"");
}

TEST_CASE("reliability: a replay trace whose arrays are shorter than declared is refused, never read past") {
  json trace = json::parse(slurp(source("tests/data/streaming_llm_means.json")));
  trace["config"]["num_layers"] = 2;
  // The source and every row now need two layers; give the source two and
  // leave the first row's q with one.
  for (const char* key : {"keys", "values"}) trace["sources"][0][key].push_back(trace["sources"][0][key][0]);
  for (const char* key : {"k", "v"}) trace["steps"][0]["rows"][0][key].push_back(trace["steps"][0]["rows"][0][key][0]);
  CHECK(what_of([&] { replay_trace(trace, {}); }) ==
        "trace steps[0].rows[0].q: expected [layers = 2][tokens][heads][head_dim]");
  trace["steps"][0]["rows"][0]["q"].push_back(trace["steps"][0]["rows"][0]["q"][0]);
  trace["steps"][0]["rows"][0]["v"].erase(1);
  CHECK(what_of([&] { replay_trace(trace, {}); }) ==
        "trace steps[0].rows[0].v: expected [layers = 2][tokens][heads][head_dim]");
}

TEST_CASE("reliability: replay traces of the wrong types name the field, never a library message") {
  const json good = json::parse(slurp(source("tests/data/streaming_llm_means.json")));
  auto message = [&](const std::function<void(json&)>& edit) {
    json t = good;
    edit(t);
    return what_of([&] { replay_trace(t, {}); });
  };
  CHECK(message([](json& t) { t["steps"] = 5; }) == "trace trace.steps: expected an array, got 5");
  CHECK(message([](json& t) { t["steps"][0]["segments"] = 3; }) == "trace steps[0].segments: expected an array, got 3");
  CHECK(message([](json& t) { t["steps"][0]["rows"][0]["request"] = 7; }) ==
        "trace steps[0].rows[0].request: expected a string, got 7");
  CHECK(message([](json& t) { t["query_heads"] = "x"; }) ==
        "trace trace.query_heads: expected an integer in [1, 65536], got \"x\"");
  CHECK(message([](json& t) { t["scale"] = 1e39; }) == "trace trace.scale: expected a finite f32 number, got 1e+39");
  CHECK(message([](json& t) { t["steps"][0]["positions"]["a"]["source"] = 1e10; }) ==
        "trace steps[0].positions.a.source: expected an integer in [-2147483648, 2147483647], got 10000000000.0");
  CHECK(message([](json& t) { t["steps"][0]["rows"][0]["q"][0][0][0][0] = 1e39; }) ==
        "trace steps[0].rows[0].q[0][0][0][0]: expected a finite f32 number, got 1e+39");
  CHECK(message([](json& t) { t["steps"][0]["positions"]["a"]["written"] = 9223372036854775808ull; }) ==
        "trace steps[0].positions.a.written: expected an integer in [-9223372036854775808, 9223372036854775807], got "
        "9223372036854775808");
  CHECK(message([](json& t) { t["steps"][0] = "x"; }) == "trace steps[0]: expected an object, got \"x\"");
  CHECK(message([](json& t) { t["config"]["max_slots"] = 2147483647; t["config"]["head_dim"] = 4096; })
            .find("max_slots 2147483647 needs") != std::string::npos);
}

// --- One request harms others -------------------------------------------------

TEST_CASE("reliability: a request under an id that is already running is refused alone") {
  const auto d = load("tts-demo.yaml", {"workload.requests.count=0"});
  const std::string a = R"({"id": "a", "voice": "alice", "prompt": [3, 4], "max_tokens": 20, "arrival": 0})" "\n";
  const auto alone = run(d, a);
  const auto events = run(d, a + R"({"id": "a", "voice": "bob", "prompt": [9], "max_tokens": 5, "arrival": 6})" "\n");
  std::vector<json> mine, refusals;
  for (const json& e : of(events, "a")) (e["event"] == "error" ? refusals : mine).push_back(e);
  CHECK(mine == of(alone, "a"));
  REQUIRE(refusals.size() == 1);
  CHECK(refusals[0]["message"] == "request 'a': a request with this id is already waiting or running");
}

// --- Security ---------------------------------------------------------------

TEST_CASE("reliability: --frames-dir writes every id inside the directory under a safe name") {
  TempDir dir;
  const std::string frames = dir / "frames", requests = dir / "r.jsonl";
  spill(requests, R"({"id": "../x", "frames": 1})" "\n" R"({"id": "/tmp/abs", "frames": 1})" "\n"
                  R"({"id": "a/b", "frames": 1})" "\n" R"({"id": ".hidden", "frames": 1})" "\n");
  const Ran r = sh(fmt::format("cd {} && {} configs/world-demo.yaml --requests {} --frames-dir {} --out {}",
                               MSTAR_SOURCE_DIR, MSTAR_RUN_BIN, requests, frames, dir / "events"));
  REQUIRE_MESSAGE(r.rc == 0, r.err);
  std::set<std::string> names;
  for (const auto& f : fs::directory_iterator(frames)) names.insert(f.path().filename().string());
  CHECK(names == std::set<std::string>{"%2E.%2Fx-000000.f32", "%2Ftmp%2Fabs-000000.f32", "a%2Fb-000000.f32",
                                       "%2Ehidden-000000.f32"});
  CHECK(!fs::exists(dir / "x-000000.f32"));
  CHECK(!fs::exists("/tmp/abs-000000.f32"));
}

// --- Unbounded reads and silent loss ------------------------------------------

TEST_CASE("reliability: a ',' outside [ ] or { } is refused where it stands, wherever it stands") {
  // yaml-cpp 0.7 never ended a stream holding one of these (fuzz_deployment
  // found the first, fuzz_manifest the one after comments and blank lines).
  const std::vector<std::pair<std::string, std::string>> cases = {
      {", !c ", "t.yaml:1:1: error: "},
      {"# a comment\n\n, a\n", "t.yaml:3:1: error: "},
      {"   \n  , x\n", "t.yaml:2:3: error: "},
      {"- a\n, b\n", "t.yaml:2:1: error: "},
      {"[a, b]\n, c\n", "t.yaml:2:1: error: "},
      {"--- # c\n, x\n", "t.yaml:2:1: error: "},
      {"# \xc3\xa9t\xc3\xa9\n, x\n", "t.yaml:2:1: error: "},  // yaml-cpp's offset is in bytes
  };
  for (const auto& [text, where] : cases) {
    CAPTURE(text);
    Diagnostics diags;
    CHECK_FALSE(load_yaml_text(text, "t.yaml", diags));
    CHECK(diags.str() == where + "unexpected ',': outside [ ] or { } a comma cannot start a value\n");
  }
  Diagnostics bom;  // yaml-cpp does not count a byte-order mark in its offset: the general message
  CHECK_FALSE(load_yaml_text("\xef\xbb\xbf, x\n", "t.yaml", bom));
  CHECK(bom.str() == "t.yaml:1:1: error: the YAML parser cannot go on from here\n");
  // Inside a flow collection a comma is what it should be; two documents are
  // refused as two documents, a ',' starting the second one too.
  Diagnostics ok;
  CHECK(load_yaml_text("a: [1, 2]\nb: {c: 3, d: 4}\n", "t.yaml", ok));
  Diagnostics two;
  CHECK_FALSE(load_yaml_text("a: 1\n---\nb: 2\n", "t.yaml", two));
  CHECK(two.str().find("more than one YAML document in one file") != std::string::npos);
  Diagnostics second;
  CHECK_FALSE(load_yaml_text("a: 1\n---\n, b\n", "t.yaml", second));
  CHECK(second.str().find("more than one YAML document in one file") != std::string::npos);
}

TEST_CASE("reliability: every file read has a limit, directories and devices are refused or bounded") {
  TempDir dir;
  CHECK(what_of([&] { read_file(dir.path, 100, "--requests d"); }) == "--requests d: is a directory, not a file");
  CHECK(what_of([] { read_file("/dev/zero", 1024, "voice"); }) == "voice: is larger than the limit of 1024 bytes");
  CHECK(what_of([] { read_regular_file("/dev/zero", 1 << 30, "tokenizer.json"); }) ==
        "tokenizer.json: is not a regular file (a device, socket or pipe?)");
  CHECK(what_of([&] { read_regular_file(dir.path, 100, "config.json"); }) == "config.json: is a directory, not a file");
  spill(dir / "f", std::string(2000, 'x'));
  CHECK(what_of([&] { read_file(dir / "f", 1000, "f"); }) == "f: is 2000 bytes, over the limit of 1000 bytes");
  CHECK(read_file(dir / "f", 2000, "f").size() == 2000);
  CHECK(what_of([&] { read_file(dir / "none", 10, "n"); }) == "n: cannot be read: No such file or directory");
  // Lines: one longer than the limit is skipped and said so, the lines after
  // it read; more than the total refuses the input.
  std::istringstream long_line("ab\n" + std::string(100, 'x') + "\ncd");
  LineReader lines(long_line, "in", 10, 1000);
  std::string l;
  CHECK(lines.next(l) == LineRead::line);
  CHECK(l == "ab");
  CHECK(lines.next(l) == LineRead::too_long);
  CHECK(l.empty());
  CHECK(lines.next(l) == LineRead::line);
  CHECK(l == "cd");
  CHECK(lines.line_number() == 3);
  CHECK(lines.next(l) == LineRead::end);
  std::istringstream many(std::string(50, '\n'));
  LineReader total(many, "in", 10, 20);
  CHECK(what_of([&] {
          while (total.next(l) != LineRead::end) {
          }
        }) == "in: more than 20 bytes in all (at line 21)");
  // One over-long request line fails alone; the requests around it run.
  std::istringstream with_long(R"({"id": "a", "voice": "alice", "prompt": [1], "max_tokens": 1})" "\n" +
                               std::string(kMaxRequestLineBytes + 1, '{') + "\n" +
                               R"({"id": "b", "voice": "alice", "prompt": [1], "max_tokens": 1})" "\n");
  const std::vector<RequestLine> read = read_request_lines(with_long, "--requests x");
  REQUIRE(read.size() == 3);
  CHECK(read[0].id == "a");
  CHECK(read[1].kind == RequestLine::Kind::reject);
  CHECK(read[1].message == "line 2: longer than the limit of 4194304 bytes (4 MiB) (the line is skipped)");
  CHECK(read[2].id == "b");
  CHECK(read[2].kind != RequestLine::Kind::reject);
  std::ifstream endless("/dev/zero", std::ios::binary);
  CHECK(what_of([&] { read_request_lines(endless, "--requests x"); }) ==
        "--requests x: more than 268435456 bytes (256 MiB) in all (at line 1)");
}

TEST_CASE("reliability: a failed write is an error naming the file, and an atomic write leaves no part behind") {
  OutputFile full(fs::path("/dev/full"));
  full.write("event\n");
  CHECK(what_of([&] { full.flush(); }) == "/dev/full: writing failed: No space left on device");
  TempDir dir;
  write_file_atomic(dir / "a", "first");
  write_file_atomic(dir / "a", "second");
  CHECK(slurp(dir / "a") == "second");
  CHECK(what_of([&] { write_file_atomic(dir / "no/a", "x"); }) ==
        dir / "no/a" + ": cannot be written: No such file or directory");
  int files = 0;
  for (const auto& f : fs::directory_iterator(dir.path)) files += f.is_regular_file();
  CHECK(files == 1);
}

// --- Numbers -----------------------------------------------------------------

TEST_CASE("reliability: numbers beyond int64 are named as written, overflowing arithmetic is refused") {
  const json r = json::parse(R"({"id": "a", "max_tokens": 9223372036854775808})");
  CHECK(what_of([&] { JsonFields(r, "request 'a'").integer("max_tokens", 1, 100); }) ==
        "request 'a': 'max_tokens' must be in [1, 100], got 9223372036854775808");
  CHECK(checked_add<int64_t>(INT64_MAX, 1) == std::nullopt);
  CHECK(checked_mul<int64_t>(INT64_MAX / 2, 3) == std::nullopt);
  CHECK(checked_product({1 << 20, 1 << 20, 1 << 20, 1 << 20}) == std::nullopt);
  CHECK(checked_product({-1, 2}) == std::nullopt);
  CHECK(checked_product({3, 5, 7}) == std::optional<uint64_t>(105));
  CHECK(what_of([] { add_or_throw(INT64_MAX, 1, "frame"); }) == "frame: 9223372036854775807 + 1 does not fit in 64 bits");
  // A ring frame at the end of int64: refused at admission, no clock past it.
  json trace = json::parse(slurp(source("tests/data/ring_rollout_f16.json")));
  trace["steps"][0]["rows"][0]["frame"] = INT64_MAX;
  const json out = replay_trace(trace, {});
  CHECK(out["steps"][0]["admit"]["outcome"] == "refused");
  CHECK(out["steps"][0]["admit"]["reason"].get<std::string>().find("beyond the clock's range [0, 4611686018427387904]") !=
        std::string::npos);
  // Float controls beyond f32 are refused, not turned into infinity.
  const auto d = load("world-demo.yaml", {"workload.requests.count=0"});
  const auto events = run(d, R"({"id": "w", "frames": 1, "controls": [[1e39, 0, 0, 0]]})" "\n");
  CHECK(events[0]["message"] == "request 'w': controls[0] has 1e+39, not a finite f32 number");
}

TEST_CASE("reliability: absurd sizes are refused before allocating, naming the option and the bytes") {
  // Under the fixed limit for one resource but beyond this machine (786 GB).
  const std::string slots = refused("tts-demo.yaml", {"resources.voice_kv.max_slots=1000000"});
  CHECK_MESSAGE(slots.find("memory: the deployment needs") != std::string::npos, slots);
  CHECK(slots.find("resource 'voice_kv'") != std::string::npos);
  CHECK(slots.find("max_slots 1000000") != std::string::npos);
  CHECK(slots.find("on this machine") != std::string::npos);
  // Beyond the fixed limit: refused whatever the machine.
  const std::string beyond = refused("tts-demo.yaml", {"resources.voice_kv.max_slots=20000000"});
  CHECK_MESSAGE(beyond.find("resource 'voice_kv': max_slots 20000000 needs 15728640000000 bytes (") != std::string::npos,
                beyond);
  CHECK(beyond.find("for the slot pool (786432 bytes per slot of 192 entries), over the limit of 1099511627776 bytes "
                    "(1 TiB) for one resource") != std::string::npos);
  const std::string tib = refused("world-demo.yaml", {"resources.world_kv.num_sessions=2000000000"});
  CHECK_MESSAGE(tib.find("num_sessions 2000000000 needs") != std::string::npos, tib);
  CHECK(tib.find("over the limit of 1099511627776 bytes (1 TiB) for one resource") != std::string::npos);
  bench::KernelShape s;
  s.kv_len = 2147483647;
  CHECK(what_of([&] { bench::check_kernel_shape(s, Backend::cpu); }).find("--kv-len 2147483647") == 0);
  s = {};
  s.batch = 1000000;
  s.kv_len = 65536;
  CHECK(what_of([&] { bench::check_kernel_shape(s, Backend::cpu); }).find("needs") != std::string::npos);
  s = {};
  s.head_dim = 100000;
  s.kv_len = 1 << 20;
  s.batch = 64;
  CHECK(what_of([&] { bench::check_kernel_shape(s, Backend::cpu); }).find("--head-dim 100000") != std::string::npos);
  BoundedKVConfig c = bounded_kv_config_from_json(json::parse(slurp(source("tests/data/streaming_llm_means.json")))["config"], "t");
  c.max_slots = INT32_MAX;
  c.head_dim = 1 << 20;
  CHECK(what_of([&] { c.validate("trace.config"); }).find("trace.config: max_slots 2147483647 needs") == 0);
}

// --- Check and run agree ----------------------------------------------------------

TEST_CASE("reliability: what mstar-check accepts, mstar-run serves") {
  TempDir dir;
  CHECK(refused("tts-demo.yaml", {"workload.voices.bob={file: " + dir.path.string() + "}"}).find("is a directory") !=
        std::string::npos);
  CHECK(refused("tts-demo.yaml", {"workload.voices.bob={file: /dev/zero}"}).find("is not a regular file") !=
        std::string::npos);
  CHECK(refused("tts-demo.yaml", {"workload.requests.seed=9223372036854775807"})
            .find("workload.requests.seed must be in [0, 2147483647]") != std::string::npos);
  CHECK(refused("tts-demo.yaml", {"workload.requests.sampling.top_k=-1"}).find("top_k must be in [0, 1024]") !=
        std::string::npos);
  CHECK(refused("tts-demo.yaml", {"workload.requests.sampling.top_k=100000"}).find("top_k must be in [0, 1024]") !=
        std::string::npos);
  CHECK(refused("tts-demo.yaml", {"workload.guidance_scale=1e39"}).find("guidance_scale") != std::string::npos);
  // A batch smaller than one request's rows could never admit anyone.
  std::string manifest = slurp(source("models/tiny-tts.yaml"));
  manifest.replace(manifest.find("rows_per_request: 1"), 19, "rows_per_request: 2");
  spill(dir / "m.yaml", manifest);
  std::string config = slurp(source("configs/tts-demo.yaml"));
  config.replace(config.find("../models/tiny-tts.yaml"), 23, "m.yaml");
  config.replace(config.find("max_batch: 16"), 13, "max_batch: 1");
  spill(dir / "c.yaml", config);
  std::string diags;
  CHECK(!try_load(dir / "c.yaml", {}, diags));
  CHECK_MESSAGE(diags.find("scheduler.max_batch: 1 rows per step cannot hold one request of resource 'voice_kv', which "
                           "owns rows_per_request = 2 rows") != std::string::npos,
                diags);
  // Requests: top_k outside the vocabulary, a seed past int64.
  const auto d = load("tts-demo.yaml", {"workload.requests.count=0"});
  const auto events = run(d, R"({"id": "k", "voice": "alice", "prompt": [1], "max_tokens": 2, "sampling": {"top_k": -3}})" "\n"
                             R"({"id": "s", "voice": "alice", "prompt": [1], "max_tokens": 2, "sampling": {"seed": 18446744073709551616}})" "\n");
  CHECK(of(events, "k")[0]["message"] == "request 'k' sampling: 'top_k' must be in [0, 1024], got -3");
  CHECK(of(events, "s")[0]["message"].get<std::string>().find("request 's' sampling: 'seed' must be") == 0);
}

// --- Weights -----------------------------------------------------------------

namespace {

// A safetensors file from a header written by hand and `data` bytes.
void write_raw_safetensors(const fs::path& p, const std::string& header, const std::string& data) {
  std::string out;
  for (int i = 0; i < 8; ++i) out.push_back(static_cast<char>((header.size() >> (8 * i)) & 0xff));
  spill(p, out + header + data);
}

}  // namespace

TEST_CASE("reliability: weights files: duplicate names, overlapping bytes, gaps and trailing bytes refused, non-finite values refused at load") {
  TempDir dir;
  write_raw_safetensors(dir / "dup.safetensors",
                        R"({"a": {"dtype": "F32", "shape": [1], "data_offsets": [0, 4]}, "a": {"dtype": "F32", "shape": [1], "data_offsets": [4, 8]}})",
                        std::string(8, '\0'));
  CHECK(what_of([&] { read_safetensors_header(dir / "dup.safetensors"); }) ==
        dir / "dup.safetensors" + ": tensor 'a' appears twice in the header");
  write_raw_safetensors(dir / "overlap.safetensors",
                        R"({"a": {"dtype": "F32", "shape": [2], "data_offsets": [0, 8]}, "b": {"dtype": "F32", "shape": [1], "data_offsets": [4, 8]}})",
                        std::string(8, '\0'));
  CHECK(what_of([&] { read_safetensors_header(dir / "overlap.safetensors"); }) ==
        dir / "overlap.safetensors" + ": tensors 'a' and 'b' overlap in the data section");
  // The tensors cover the data section exactly, as the safetensors library requires.
  write_raw_safetensors(dir / "gap.safetensors",
                        R"({"a": {"dtype": "F32", "shape": [1], "data_offsets": [0, 4]}, "b": {"dtype": "F32", "shape": [1], "data_offsets": [8, 12]}})",
                        std::string(12, '\0'));
  CHECK(what_of([&] { read_safetensors_header(dir / "gap.safetensors"); }) ==
        dir / "gap.safetensors" + ": bytes [4, 8) of the data section belong to no tensor (before 'b'); a safetensors "
                                  "file's tensors cover its data exactly");
  write_raw_safetensors(dir / "tail.safetensors", R"({"a": {"dtype": "F32", "shape": [1], "data_offsets": [0, 4]}})",
                        std::string(7, '\0'));
  CHECK(what_of([&] { read_safetensors_header(dir / "tail.safetensors"); }) ==
        dir / "tail.safetensors" + ": 3 bytes after the last tensor's data belong to no tensor; a safetensors file's "
                                   "tensors cover its data exactly");
  write_raw_safetensors(dir / "exact.safetensors",
                        R"({"e": {"dtype": "F32", "shape": [0], "data_offsets": [0, 0]}, "a": {"dtype": "F32", "shape": [1], "data_offsets": [0, 4]}})",
                        std::string(4, '\0'));
  CHECK(read_safetensors_header(dir / "exact.safetensors").tensors.size() == 2);
  write_raw_safetensors(dir / "deep.safetensors", "{\"a\": " + nested(1000) + "}", "");
  CHECK(what_of([&] { read_safetensors_header(dir / "deep.safetensors"); }).find("nests deeper") != std::string::npos);
  // A NaN in the committed checkpoint's first tensor: refused when loaded.
  fs::copy(source("models/hf-demo-qwen2"), dir / "ckpt");
  std::string w = slurp(dir / "ckpt/model.safetensors");
  uint64_t len = 0;
  for (int i = 7; i >= 0; --i) len = (len << 8) | static_cast<unsigned char>(w[static_cast<size_t>(i)]);
  const SafetensorsHeader h = read_safetensors_header(dir / "ckpt/model.safetensors");
  const auto& [name, e] = *h.tensors.begin();
  REQUIRE(e.dtype == "BF16");
  const size_t at = 8 + len + e.begin + 2 * 3;  // element 3
  w[at] = static_cast<char>(0xc0), w[at + 1] = 0x7f;  // bf16 quiet NaN
  spill(dir / "ckpt/model.safetensors", w);
  std::vector<TensorSpec> specs;
  for (const auto& [n, t] : h.tensors) specs.push_back({n, t.shape});
  CHECK(what_of([&] { Weights::load({dir / "ckpt/model.safetensors"}, specs); }) ==
        fmt::format("{}: tensor '{}' holds nan at element 3: weights must be finite (every output would be garbage)",
                    dir / "ckpt/model.safetensors", name));
}

// --- Memory over time ----------------------------------------------------------

TEST_CASE("reliability: latency samples stay bounded however long a run is, and exact while they fit") {
  Samples s;
  for (int i = 1; i <= 100; ++i) s.add(i);
  CHECK(s.percentile(50) == 50);
  CHECK(s.percentile(99) == 99);
  for (int i = 101; i <= 1000000; ++i) s.add(i);
  CHECK(s.kept().size() == Samples::kCapacity);
  CHECK(s.count() == 1000000);
  CHECK(s.sum() == 500000500000.0);
  // A uniform sample: the median of 1..1e6 within a percent.
  CHECK(std::abs(s.percentile(50) - 500000) < 10000);
}

TEST_CASE("reliability: freed heap memory goes back to the system, and the heap says what it holds") {
  if (heap_in_use_bytes() < 0) {
    MESSAGE("the heap in use (another C library, or a sanitizer's allocator) neither says nor trims");
    return;
  }
  const int64_t before = heap_in_use_bytes();
  // 8 MiB in 16 KiB pieces (below glibc's mmap threshold: on the heap), each
  // followed by a small allocation that stays: freed, the pieces cannot merge
  // into the heap's top, so only the trim gives their pages back.
  std::vector<std::unique_ptr<char[]>> pieces, keep;
  for (int i = 0; i < 512; ++i) {
    pieces.emplace_back(new char[16384]);
    std::memset(pieces.back().get(), 1, 16384);
    keep.emplace_back(new char[64]);
  }
  CHECK(heap_in_use_bytes() - before >= int64_t{8} << 20);
  pieces.clear();
  CHECK(heap_in_use_bytes() - before < int64_t{1} << 20);
  const int64_t freed = bench::current_rss_bytes();
  return_free_heap();
  // At least the three whole pages inside each piece.
  CHECK(freed - bench::current_rss_bytes() >= int64_t{5} << 20);
}

TEST_CASE("reliability: the soak judges memory by its level, so buffers that come and go are not growth") {
  using bench::SoakSample;
  // 25 minutes after a 5-minute warm-up, one sample a second at `per_s`
  // steps a second, around 100 MiB; rss_at reads the step.
  auto run = [](auto rss_at, int64_t per_s = 1) {
    std::vector<SoakSample> s;
    for (int t = 0; t <= 1800; ++t) {
      SoakSample x;
      x.seconds = t;
      x.steps = t * per_s;
      x.rss_bytes = rss_at(x.steps);
      s.push_back(x);
    }
    return s;
  };
  constexpr int64_t MiB = int64_t{1} << 20;
  // Flat, with a buffer of 5 MiB in flight one second in seven: peaks, no growth.
  const auto spikes = bench::memory_levels(run([&](int64_t t) { return 100 * MiB + (t % 7 == 0 ? 5 * MiB : 0); }), 300, 1800, 60);
  CHECK(spikes.windows == 25);
  CHECK(spikes.base == 100 * MiB);
  CHECK(spikes.growth() == 0.0);
  // A leak of 2 MiB over the 25 minutes: the last minute's level is 2% up.
  const auto leak = bench::memory_levels(
      run([&](int64_t t) { return 100 * MiB + (t > 300 ? 2 * MiB * (t - 300) / 1500 : 0); }), 300, 1800, 60);
  CHECK(leak.growth() > 0.018);
  CHECK(leak.growth() < 0.02);
  CHECK(leak.high_from_step == 1740);
  // A step of half a MiB a third of the way: half a percent, from there on.
  const auto step = bench::memory_levels(run([&](int64_t t) { return t < 800 ? 100 * MiB : 100 * MiB + MiB / 2; }), 300, 1800, 60);
  CHECK(step.growth() == doctest::Approx(0.005));
  // A last window shorter than half of one does not count: 15 steps of 45 here.
  const auto tail = bench::memory_levels(run([&](int64_t t) { return t > 1780 ? 200 * MiB : 100 * MiB; }), 300, 1800, 45);
  CHECK(tail.growth() == 0.0);
  // A buffer held for the same 90 steps (a resume waiting for admission) in
  // a window of 120 steps: the verdict is the same on a machine three times
  // as slow (windows and the buffer counted in steps), where counted in
  // seconds it covered one window on the slow one and most of none on the
  // fast one.
  const auto held = [&](int64_t t) { return 100 * MiB + (t > 1200 && t <= 1290 ? MiB : 0); };
  const auto fast = bench::memory_levels(run(held, 3), 900, 5400, 120);
  const auto slow = bench::memory_levels(run(held, 1), 300, 1800, 120);
  CHECK(fast.high == slow.high);
  CHECK(fast.base == slow.base);
}
