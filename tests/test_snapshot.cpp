// Snapshots: a stream saved mid-way and resumed by another engine (or
// another process) continues bit for bit as if it had never stopped; a file
// that is truncated, corrupted, of another version, model, weights,
// geometry or voice is refused with the reason while the engine goes on
// serving the others.
#include <doctest/doctest.h>

#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>

#include "core/files.h"
#include "core/json_text.h"
#include "deployments.h"
#include "engine/engine.h"
#include "engine/program.h"
#include "engine/run.h"
#include "engine/snapshot.h"
#include "temp_dir.h"
#include "resources/bounded_kv/manager.h"
#include "resources/ring_kv/manager.h"

using namespace mstar;
using nlohmann::json;
namespace fs = std::filesystem;

namespace {

using test::TempDir;

std::string slurp(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}

void spill(const fs::path& p, const std::string& s) { std::ofstream(p, std::ios::binary) << s; }

fs::path source(const std::string& rel) { return fs::path(MSTAR_SOURCE_DIR) / rel; }

// A copy of a shipped manifest with lines replaced, and a deployment over it,
// in `dir`; the manifest's relative paths (a checkpoint folder) made absolute.
fs::path variant(const TempDir& dir, const std::string& config, const std::string& manifest,
                 const std::vector<std::pair<std::string, std::string>>& manifest_edits,
                 const std::vector<std::pair<std::string, std::string>>& config_edits = {}) {
  std::string m = slurp(source("models/" + manifest));
  for (const auto& [from, to] : manifest_edits) {
    const auto at = m.find(from);
    REQUIRE_MESSAGE(at != std::string::npos, from);
    m.replace(at, from.size(), to);
  }
  if (const auto at = m.find("checkpoint: "); at != std::string::npos)
    m.replace(at, 12, "checkpoint: " + source("models").string() + "/");
  spill(dir.path / ("m-" + manifest), m);
  std::string c = slurp(source("configs/" + config));
  c.replace(c.find("model: ../models/" + manifest), 17 + manifest.size(), "model: m-" + manifest);
  for (const auto& [from, to] : config_edits) {
    const auto at = c.find(from);
    REQUIRE_MESSAGE(at != std::string::npos, from);
    c.replace(at, from.size(), to);
  }
  const fs::path out = dir.path / ("c-" + std::to_string(std::hash<std::string>{}(m + c)) + ".yaml");
  spill(out, c);
  return out;
}

std::vector<json> run(Engine& engine, const std::string& lines) {
  std::istringstream in(lines);
  std::vector<json> events;
  run_lines(engine, read_request_lines(in), {}, [&](const Event& e) { events.push_back(e.body); });
  return events;
}

std::vector<json> run(const ResolvedDeployment& d, const std::string& lines) {
  auto engine = Engine::create(d);
  return run(*engine, lines);
}

// Request `id`'s events after the first event of kind `after` (exclusive).
std::vector<json> after(const std::vector<json>& events, const std::string& id, const std::string& kind) {
  std::vector<json> out;
  bool on = false;
  for (const json& e : events) {
    if (e["id"] != id) continue;
    if (on) out.push_back(e);
    if (e["event"] == kind) on = true;
  }
  return out;
}

std::vector<json> of(const std::vector<json>& events, const std::string& id) {
  std::vector<json> out;
  for (const json& e : events)
    if (e["id"] == id) out.push_back(e);
  return out;
}

std::string speech_line(const std::string& id, const std::string& voice, int max_tokens, int arrival,
                        const std::string& sampling) {
  return fmt::format(R"({{"id": "{}", "voice": "{}", "prompt": [5, 9, 2, 11], "max_tokens": {}, "arrival": {}{}}})",
                     id, voice, max_tokens, arrival, sampling.empty() ? "" : ", \"sampling\": " + sampling) +
         "\n";
}

std::string op_line(const std::string& op, const std::string& id, const std::string& path, int arrival) {
  return fmt::format(R"({{"op": "{}", "id": "{}", "path": "{}", "arrival": {}}})", op, id, path, arrival) + "\n";
}

// Runs `a` beside another request, snapshots it at step `at`, lets both
// finish; then resumes the file in a fresh engine and checks every later
// event of `a` is the same, bit for bit.
void check_resume(const ResolvedDeployment& d, const std::string& a_line, const std::string& other_line, int at) {
  TempDir dir;
  const std::string snap = dir / "a.snap";
  const std::vector<json> first = run(d, a_line + other_line + op_line("snapshot", "a", snap, at));
  const std::vector<json> later = after(first, "a", "snapshot");
  REQUIRE(!later.empty());
  REQUIRE(later.back()["event"] == "done");
  CHECK(fs::exists(snap));
  const std::vector<json> second = run(d, R"({"op": "resume", "path": ")" + snap + "\"}\n");
  const std::vector<json> resumed = after(second, "a", "resumed");
  CHECK(resumed.size() == later.size());
  CHECK(resumed == later);
}

}  // namespace

TEST_CASE("snapshot: speech streams resume bit for bit, greedy and sampled, stream and cache positions") {
  TempDir dir;
  const std::string sampled = R"({"temperature": 0.9, "top_k": 40, "top_p": 0.95, "seed": 77})";
  SUBCASE("tts, stream positions, sampled, snapshot after eviction began") {
    // retention sink 4 + window 124: by step 150 the window has wrapped.
    check_resume(test::shipped("tts-demo.yaml", {"workload.requests.count=0"}),
                 speech_line("a", "alice", 220, 0, sampled), speech_line("b", "bob", 60, 3, sampled), 150);
  }
  SUBCASE("tts, stream positions, greedy, snapshot before its first step") {
    check_resume(test::shipped("tts-demo.yaml", {"workload.requests.count=0"}),
                 speech_line("a", "alice", 40, 2, ""), speech_line("b", "bob", 30, 0, ""), 2);
  }
  SUBCASE("tts, cache positions, sampled") {
    const fs::path c = variant(dir, "tts-demo.yaml", "tiny-tts.yaml", {{"  end_token: 1023\n", "  end_token: 1023\n  positions: cache\n"}});
    check_resume(test::load_or_fail(c, {"workload.requests.count=0"}), speech_line("a", "bob", 200, 0, sampled),
                 speech_line("b", "alice", 50, 1, sampled), 140);
  }
  SUBCASE("hf checkpoint, cache positions, greedy") {
    check_resume(test::shipped("hf-demo.yaml", {"workload.requests.count=0"}),
                 speech_line("a", "alice", 40, 0, ""), speech_line("b", "bob", 30, 0, ""), 17);
  }
  SUBCASE("hf checkpoint, stream positions, sampled") {
    const fs::path c = variant(dir, "hf-demo.yaml", "hf-demo.yaml", {{"positions: cache", "positions: stream"}});
    check_resume(test::load_or_fail(c, {"workload.requests.count=0"}), speech_line("a", "bob", 40, 0, sampled),
                 speech_line("b", "alice", 30, 0, sampled), 7);
  }
}

TEST_CASE("snapshot: frame rollouts resume bit for bit, with and without controls") {
  const auto d = test::shipped("world-demo.yaml", {"workload.requests.count=0"});
  // Local layers keep 4 frames, global ones 16 at dilation 4: at frame 19
  // both rings have wrapped.
  check_resume(d, R"({"id": "a", "frames": 30, "seed": 5, "arrival": 0})" "\n",
               R"({"id": "b", "frames": 12, "seed": 6, "arrival": 2})" "\n", 19);
  check_resume(d, R"({"id": "a", "frames": 12, "seed": 9, "controls": [[0.5, -1, 2, 0], [1, 1, 1, 1e-3]]})" "\n", "", 5);
}

TEST_CASE("snapshot: resumed in another process, a stream goes on bit for bit") {
  TempDir dir;
  const std::string requests = dir / "first.jsonl", again = dir / "second.jsonl", snap = dir / "a.snap";
  spill(requests, speech_line("a", "alice", 120, 0, R"({"temperature": 0.7, "seed": 3})") +
                      op_line("snapshot", "a", snap, 61));
  spill(again, R"({"op": "resume", "path": ")" + snap + "\", \"id\": \"a\"}\n");
  const std::string run_bin = MSTAR_RUN_BIN;
  const std::string config = source("configs/tts-demo.yaml").string();
  REQUIRE(std::system(fmt::format("{} {} --requests {} --out {}", run_bin, config, requests, dir / "first.out").c_str()) == 0);
  REQUIRE(std::system(fmt::format("{} {} --requests {} --out {}", run_bin, config, again, dir / "second.out").c_str()) == 0);
  auto lines = [](const std::string& path) {
    std::vector<json> out;
    std::istringstream in(slurp(path));
    for (std::string l; std::getline(in, l);) out.push_back(json::parse(l));
    return out;
  };
  const auto later = after(lines(dir / "first.out"), "a", "snapshot");
  REQUIRE(later.size() > 3);
  CHECK(after(lines(dir / "second.out"), "a", "resumed") == later);
}

TEST_CASE("snapshot: a snapshot of a stream under another id, in the same engine, runs beside the original") {
  TempDir dir;
  auto engine = Engine::create(test::shipped("tts-demo.yaml", {"workload.requests.count=0"}));
  const std::string snap = dir / "a.snap";
  const auto events = run(*engine, speech_line("a", "alice", 50, 0, R"({"temperature": 1.0, "seed": 1})") +
                                       op_line("snapshot", "a", snap, 20) +
                                       R"({"op": "resume", "path": ")" + snap + R"(", "id": "a2", "arrival": 21})" "\n" +
                                       R"({"op": "resume", "path": ")" + snap + R"(", "arrival": 21})" "\n");
  // The second resume takes the snapshot's own id, which is still running: refused alone.
  const auto a = of(events, "a");
  bool refused = false;
  for (const json& e : a)
    refused = refused || (e["event"] == "error" && e["message"].get<std::string>().find("already waiting or running") !=
                                                       std::string::npos);
  CHECK(refused);
  // a2 continues from step 20: its chunks are a's chunks from there on.
  std::vector<json> a_tail = after(events, "a", "snapshot"), a2 = after(events, "a2", "resumed");
  std::vector<json> a_chunks, a2_chunks;
  for (json e : a_tail)
    if (e["event"] != "error") e.erase("id"), a_chunks.push_back(e);
  for (json e : a2) e.erase("id"), a2_chunks.push_back(e);
  CHECK(a2_chunks == a_chunks);
  CHECK(engine->resources().at(0).occupancy().in_use == 0);
}

TEST_CASE("snapshot: a slot pool of another size is no obstacle, and a waiting resume waits for a slot") {
  TempDir dir;
  const std::string snap = dir / "a.snap";
  const std::string sampled = R"({"temperature": 0.8, "seed": 12})";
  const auto first = run(test::shipped("tts-demo.yaml", {"workload.requests.count=0"}),
                         speech_line("a", "alice", 60, 0, sampled) + op_line("snapshot", "a", snap, 30));
  // One slot, held by another request when the resume arrives.
  const auto d1 = test::shipped("tts-demo.yaml", {"workload.requests.count=0", "resources.voice_kv.max_slots=1"});
  const auto second = run(d1, speech_line("x", "bob", 20, 0, sampled) +
                                  R"({"op": "resume", "path": ")" + snap + R"(", "arrival": 1})" "\n");
  CHECK(after(second, "a", "resumed") == after(first, "a", "snapshot"));
  CHECK(of(second, "x").back()["reason"] == "max_tokens");
}

namespace {

// A valid snapshot's bytes and what it takes to decode it.
struct Saved {
  ResolvedDeployment d;
  std::string bytes;
  Fingerprints f;
};

Saved saved_speech() {
  TempDir dir;
  const std::string snap = dir / "a.snap";
  Saved s{test::shipped("tts-demo.yaml", {"workload.requests.count=0"}), {}, {}};
  run(s.d, speech_line("a", "alice", 40, 0, R"({"temperature": 0.8, "seed": 2})") + op_line("snapshot", "a", snap, 9));
  s.bytes = slurp(snap);
  s.f = fingerprints(s.d);
  return s;
}

std::string reason(const Saved& s, const std::string& bytes) {
  try {
    decode_snapshot(bytes, "x", s.f, "speech", s.d.model.resource_specs());
  } catch (const InputError& e) {
    return e.what();
  }
  return "";
}

// The file with its checksum made right again: a writer's file whose fields lie.
std::string resealed(std::string b) {
  const uint64_t h = hash64(std::string_view(b).substr(0, b.size() - 8));
  for (int i = 0; i < 8; ++i) b[b.size() - 8 + static_cast<size_t>(i)] = static_cast<char>((h >> (8 * i)) & 0xff);
  return b;
}

}  // namespace

TEST_CASE("snapshot: truncated, corrupted, other versions: refused with the reason") {
  const Saved s = saved_speech();
  REQUIRE(s.bytes.size() > 1000);
  CHECK(reason(s, s.bytes).empty());
  for (size_t len : {size_t{0}, size_t{7}, size_t{31}, size_t{32}, s.bytes.size() / 2, s.bytes.size() - 1}) {
    const std::string why = reason(s, s.bytes.substr(0, len));
    CHECK_MESSAGE((why.find("too short") != std::string::npos || why.find("is truncated: it has") != std::string::npos),
                  len, ": ", why);
  }
  CHECK(reason(s, s.bytes + "x").find("bytes were added to it") != std::string::npos);
  // One flipped byte anywhere: every byte of the fixed prefix and the header,
  // and a spread through the sections and the checksum.
  std::vector<size_t> at;
  for (size_t i = 0; i < 24 + 2048 && i < s.bytes.size(); ++i) at.push_back(i);
  for (size_t i = 24 + 2048; i < s.bytes.size(); i += 997) at.push_back(i);
  for (size_t i = s.bytes.size() - 8; i < s.bytes.size(); ++i) at.push_back(i);
  int refused = 0;
  for (size_t i : at)
    for (unsigned char bit : {0x01, 0x80}) {
      std::string b = s.bytes;
      b[i] = static_cast<char>(static_cast<unsigned char>(b[i]) ^ bit);
      const std::string why = reason(s, b);
      refused += !why.empty();
      if (why.empty()) FAIL_CHECK("a flipped byte at ", i, " was accepted");
    }
  CHECK(refused == static_cast<int>(at.size()) * 2);
  std::string b = s.bytes;
  b[0] ^= 1;
  CHECK(reason(s, b) == "snapshot x: is not an mstar snapshot (it does not start with MSTARSNP)");
  b = s.bytes;
  b[8] = 2;
  CHECK(reason(s, b) == "snapshot x: is a snapshot of format version 2; this mstar reads version 1");
  b = s.bytes;
  b[500] ^= 4;
  CHECK(reason(s, b).find("is corrupted: its checksum is") != std::string::npos);
  // A writer whose checksum is right but whose fields lie is refused by the fields.
  b = s.bytes;
  const auto w = b.rfind("\"written\":");  // the last: the resource's (the header's keys are in order)
  REQUIRE(w != std::string::npos);
  b[w + 10] = '-';
  CHECK(!reason(s, resealed(b)).empty());
  // A cache value made NaN (the last element of the last section: 0x7fff is
  // NaN as bf16 and f16, and the high half of a NaN as f32), sealed right:
  // refused, since the resumed stream would read garbage.
  b = s.bytes;
  b[b.size() - 10] = static_cast<char>(0xff);
  b[b.size() - 9] = 0x7f;
  const std::string why = reason(s, resealed(b));
  CHECK_MESSAGE(why.find("holds nan at element") != std::string::npos, why);
  CHECK_MESSAGE(why.find("(a saved cache holds finite numbers)") != std::string::npos, why);
}

TEST_CASE("snapshot: another model, weights, geometry, voice or settings: refused with the reason, others go on") {
  TempDir dir;
  const Saved s = saved_speech();
  const std::string snap = dir / "a.snap";
  spill(snap, s.bytes);
  // Each engine serves a good request beside the refused resume, and that
  // request's stream is what it is alone.
  auto refused = [&](const fs::path& config, const std::string& expect) {
    const auto d = test::load_or_fail(config, {"workload.requests.count=0"});
    const std::string good = speech_line("g", "bob", 12, 0, R"({"temperature": 0.5, "seed": 4})");
    const auto alone = run(d, good);
    const auto events = run(d, good + R"({"op": "resume", "path": ")" + snap + R"(", "id": "a", "arrival": 0})" "\n");
    const auto a = of(events, "a");
    REQUIRE(a.size() == 1);
    CHECK(a[0]["event"] == "error");
    CHECK_MESSAGE(a[0]["message"].get<std::string>().find(expect) != std::string::npos, a[0]["message"]);
    CHECK(of(events, "g") == of(alone, "g"));
  };
  refused(variant(dir, "tts-demo.yaml", "tiny-tts.yaml", {{"end_token: 1023", "end_token: 1022"}}),
          "was made with another model (family, architecture or tokenizer): its model fingerprint is");
  refused(variant(dir, "tts-demo.yaml", "tiny-tts.yaml", {{"dummy_seed: 7", "dummy_seed: 8"}}),
          "was made with other weights: its weights fingerprint is");
  refused(variant(dir, "tts-demo.yaml", "tiny-tts.yaml", {{"window: 124", "window: 120"}}),
          "was made with another resource geometry or dtype");
  refused(variant(dir, "tts-demo.yaml", "tiny-tts.yaml", {}, {{"kv_dtype: bf16", "kv_dtype: f16"}}),
          "was made with another resource geometry or dtype");
  refused(variant(dir, "tts-demo.yaml", "tiny-tts.yaml", {}, {{"alice: {seed: 1, length: 48}", "alice: {seed: 3, length: 48}"}}),
          "voice 'alice' differs from the one the stream was made with");
  refused(variant(dir, "tts-demo.yaml", "tiny-tts.yaml", {},
                  {{"alice: {seed: 1, length: 48}", "carol: {seed: 1, length: 48}"}, {"voices: [alice, bob]", "voices: [carol, bob]"}}),
          "the stream speaks in voice 'alice', which this deployment does not have");
  refused(variant(dir, "tts-demo.yaml", "tiny-tts.yaml", {}, {{"chunk_tokens: 16", "chunk_tokens: 8"}}),
          "the stream was made with workload settings");
  // A frames engine does not take a speech stream.
  auto world = Engine::create(test::shipped("world-demo.yaml", {"workload.requests.count=0"}));
  const auto events = run(*world, R"({"op": "resume", "path": ")" + snap + R"("})" "\n");
  REQUIRE(events.size() == 1);
  CHECK(events[0]["message"].get<std::string>().find("resume: snapshot " + snap + ": was made with another model") == 0);
}

TEST_CASE("snapshot: missing, unwritable and unknown: errors that leave the streams alone") {
  TempDir dir;
  const auto d = test::shipped("tts-demo.yaml", {"workload.requests.count=0"});
  const std::string line = speech_line("a", "alice", 20, 0, "");
  const auto clean = run(d, line);
  const auto events = run(d, line + op_line("snapshot", "a", dir / "no/such/dir/a.snap", 3) +
                                 op_line("snapshot", "ghost", dir / "g.snap", 3) +
                                 R"({"op": "resume", "path": ")" + (dir / "none.snap") + R"(", "id": "r", "arrival": 4})" "\n" +
                                 R"({"op": "resume", "path": ")" + dir.path.string() + R"(", "id": "d", "arrival": 4})" "\n" +
                                 R"({"op": "snapshot", "id": "a"})" "\n");
  std::vector<json> a;
  for (const json& e : of(events, "a"))
    if (!e.contains("op")) a.push_back(e);
  CHECK(a == of(clean, "a"));
  const auto ops = of(events, "a");
  REQUIRE(ops.size() == a.size() + 1);
  CHECK(ops[0]["op"] == "snapshot");
  CHECK(ops[0]["message"].get<std::string>().find("snapshot: " + (dir / "no/such/dir/a.snap") + ": cannot be written") == 0);
  for (const char* id : {"ghost", "r", "d", "line 6"}) REQUIRE_MESSAGE(of(events, id).size() == 1, id);
  CHECK(of(events, "ghost")[0]["message"] == "snapshot: no waiting or running request 'ghost'");
  CHECK(of(events, "r")[0]["message"].get<std::string>().find("resume: " + (dir / "none.snap") + ": cannot be read") == 0);
  CHECK(of(events, "d")[0]["message"].get<std::string>().find("is a directory") != std::string::npos);
  CHECK(of(events, "line 6")[0]["message"].get<std::string>().find("line 6: an operation is") == 0);
  // Nothing half-written is left behind.
  for (const auto& f : fs::directory_iterator(dir.path)) CHECK_MESSAGE(false, "left behind: ", f.path());
}

TEST_CASE("bounded_kv: get_state, more steps, load_state: the same continuation bit for bit") {
  BoundedKVSpec spec;
  spec.resource_key = "kv";
  spec.config.num_layers = 2;
  spec.config.num_heads = 2;
  spec.config.head_dim = 4;
  spec.config.rows_per_request = 1;
  spec.config.max_source_len = 0;
  spec.config.retention = SinkWindow{2, 5, false};
  spec.config.max_slots = 2;
  spec.config.dtype = DType::bf16;
  BoundedKVManager kv(spec, {Backend::cpu, 1});
  auto step = [&](const std::string& rid, int64_t written, uint64_t seed) {
    Step st;
    st.segments = {{rid, "decode", 3}};
    st.streams[rid] = {0, written, 0};
    StepContext ctx;
    ctx.add_rows(rid, 1);
    REQUIRE(kv.admit(st, ctx).ok());
    kv.plan(st, ctx);
    std::vector<float> q(3 * 2 * 4), k(q.size()), v(q.size()), o(q.size());
    for (size_t i = 0; i < q.size(); ++i) q[i] = 0.1f * static_cast<float>((seed + i) % 7), k[i] = 0.2f * static_cast<float>((seed * 3 + i) % 5), v[i] = 0.3f * static_cast<float>((seed + 2 * i) % 11);
    const std::vector<int32_t> qi{0, 3};
    for (int64_t l = 0; l < 2; ++l) {
      LayerPass a;
      a.q = f32_view(q.data(), Shape{3, 2, 4});
      a.q_indptr = qi;
      a.k = f32_view(k.data(), Shape{3, 2, 4});
      a.v = f32_view(v.data(), Shape{3, 2, 4});
      a.out = f32_view(o.data(), Shape{3, 2, 4});
      kv.attend(l, a);
    }
    kv.commit(st, ctx);
    return o;
  };
  kv.ingest_request("a");
  for (int i = 0; i < 4; ++i) step("a", 3 * i, static_cast<uint64_t>(i));
  const BoundedRequestState saved = kv.get_state("a");
  CHECK(saved.written == 12);
  REQUIRE(saved.kv.size() == 2);
  std::vector<std::vector<float>> later;
  for (int i = 4; i < 7; ++i) later.push_back(step("a", 3 * i, static_cast<uint64_t>(i)));
  kv.remove_request("a");
  // Another request runs in the slot meanwhile, then "b" takes the state.
  kv.ingest_request("x");
  step("x", 0, 99);
  kv.ingest_request("b");
  kv.restore_position("b", saved);
  {
    Step st;
    st.segments = {{"b", "decode", 3}};
    st.streams["b"] = {0, 12, 0};
    StepContext ctx;
    ctx.add_rows("b", 1);
    REQUIRE(kv.check(st, ctx).ok());  // the declaration matches the restored position
    kv.claim(st, ctx);
    kv.load_state("b", saved);
  }
  std::vector<std::vector<float>> again;
  for (int i = 4; i < 7; ++i) again.push_back(step("b", 3 * i, static_cast<uint64_t>(i)));
  CHECK(again == later);
  // A state of another geometry is refused before anything is written.
  BoundedRequestState wrong = {};
  wrong.written = 3;
  wrong.kv.push_back(HostBuffer(DType::bf16, Shape{1, 2, 7, 8}));
  CHECK_THROWS_WITH_AS(kv.load_state("b", wrong), "bounded_kv load_state: the state has 1 layers but this resource has 2",
                       InputError);
  wrong.kv.push_back(HostBuffer(DType::f32, Shape{1, 2, 7, 8}));
  CHECK_THROWS_WITH_AS(kv.load_state("b", wrong),
                       "bounded_kv load_state: layer 1: the state is f32 [1, 2, 7, 8], but a slot of this resource "
                       "retains bf16 [1, 2, 7, 8]",
                       InputError);
}
