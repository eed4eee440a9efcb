// A resource type defined here alone, registered as an embedder would: a
// manifest names it, mstar-check plans it, a deployment tunes it, and the
// scheduler drives it through the Resource interface while the model attends
// through the AttentionMemory one. It keeps its own book (at most
// `admit_at_once` requests hold a claim, so the rest wait) and serves
// attention through a bounded KV resource it holds; it records what the
// scheduler asked of it.
#include <doctest/doctest.h>

#include <algorithm>
#include <map>
#include <set>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "config/memory_plan.h"
#include "config/resource_types.h"
#include "core/errors.h"
#include "engine/engine.h"
#include "models/families/tts.h"
#include "resources/bounded_kv/manager.h"
#include "deployments.h"
#include "temp_dir.h"

using namespace mstar;
using nlohmann::json;

namespace {

// What the scheduler asked, over every gate built since the last clear.
struct GateLog {
  int64_t retries = 0, claims = 0, plans = 0, commits = 0, removes = 0;
  size_t most_claimed = 0;  // requests holding a claim at once
} gate_log;

struct GateSpec final : ResourceSpec {
  BoundedKVSpec inner;
  int64_t admit_at_once = 1;

  GateSpec(BoundedKVSpec b, int64_t n) : inner(std::move(b)), admit_at_once(n) {}
  std::unique_ptr<ResourceSpec> copy() const override { return std::make_unique<GateSpec>(*this); }
  std::string_view type() const override { return "test_gate"; }
  const std::string& key() const override { return inner.key(); }
  std::vector<int64_t> served_layers() const override { return inner.served_layers(); }
  void validate(std::string_view where) const override {
    if (admit_at_once < 1)
      throw ConfigError(fmt::format("{}: admit_at_once must be at least 1, got {}", where, admit_at_once));
    inner.validate(where);
  }
  std::unique_ptr<Resource> build(const ResourceOptions& options) const override;
  DType dtype() const override { return inner.dtype(); }
  void set_dtype(DType d) override { inner.set_dtype(d); }
  std::string_view pool_field() const override { return "admit_at_once"; }
  int64_t pool_size() const override { return admit_at_once; }
  void set_pool_size(int64_t n) override { admit_at_once = n; }
  int64_t rows_per_request() const override { return inner.rows_per_request(); }
  SourceLimits source_limits() const override { return inner.source_limits(); }
  json config_json() const override {
    json c = inner.config_json();
    c["admit_at_once"] = admit_at_once;
    return c;
  }
  uint64_t bytes(std::span<const int64_t> source_lens) const override { return inner.bytes(source_lens); }
  json plan_json(std::span<const int64_t> source_lens) const override {
    return json{{"resource_key", key()},  {"type", type()}, {"layers", served_layers().size()},
                {"config", config_json()}, {"total_bytes", bytes(source_lens)}};
  }
  std::vector<Shape> state_shapes() const override { return inner.state_shapes(); }
  void check_state_fields(const json& fields, const std::string& where) const override {
    inner.check_state_fields(fields, where);
  }
  RequestState make_state(const json& fields, std::vector<HostBuffer> sections) const override {
    return inner.make_state(fields, std::move(sections));
  }
};

class Gate final : public Resource, public AttentionMemory {
 public:
  Gate(const GateSpec& spec, const ResourceOptions& options) : spec_(spec), kv_(spec.inner, options) {}

  std::string_view type() const override { return "test_gate"; }
  const std::string& key() const override { return spec_.key(); }
  void ingest_request(const std::string& rid) override { kv_.ingest_request(rid); }
  AdmitOutcome check(const Step& step, const StepContext& ctx) const override {
    std::set<std::string> want = claimed_;
    for (const Segment& s : step.segments) want.insert(s.request_id);
    if (static_cast<int64_t>(want.size()) > spec_.admit_at_once) {
      ++gate_log.retries;
      return AdmitOutcome::retry_later(step.segments.back().request_id, "the gate admits fewer at once");
    }
    return kv_.check(step, ctx);
  }
  void claim(const Step& step, const StepContext& ctx) override {
    for (const Segment& s : step.segments) claimed_.insert(s.request_id);
    gate_log.most_claimed = std::max(gate_log.most_claimed, claimed_.size());
    ++gate_log.claims;
    kv_.claim(step, ctx);
  }
  void plan(const Step& step, const StepContext& ctx) override {
    ++gate_log.plans;
    kv_.plan(step, ctx);
  }
  void commit(const Step& step, const StepContext& ctx) override {
    ++gate_log.commits;
    kv_.commit(step, ctx);
  }
  void reset_request(const std::string& rid, OnReset what) override {
    if (what == OnReset::release) claimed_.erase(rid);
    kv_.reset_request(rid, what);
  }
  void remove_request(const std::string& rid) override {
    ++gate_log.removes;
    claimed_.erase(rid);
    kv_.remove_request(rid);
  }
  std::size_t memory_bytes() const override { return kv_.memory_bytes(); }
  Occupancy occupancy() const override {
    return {static_cast<int64_t>(claimed_.size()), spec_.admit_at_once, "requests"};
  }
  int64_t requests() const override { return kv_.requests(); }
  bool holds_claim(const std::string& rid) const override { return claimed_.count(rid) > 0; }

  void attend(int64_t layer, const LayerPass& pass) override { kv_.attend(layer, pass); }
  int64_t seen_before(std::size_t row) const override { return kv_.seen_before(row); }
  bool holds_sources() const override { return true; }
  void register_source(int id, int64_t len) override { kv_.register_source(id, len); }
  void prefill_source(int id, int64_t layer, int64_t row, const LayerPass& pass) override {
    kv_.prefill_source(id, layer, row, pass);
  }
  void remove_source(int id) override { kv_.remove_source(id); }

 private:
  GateSpec spec_;
  BoundedKVManager kv_;
  std::set<std::string> claimed_;
};

std::unique_ptr<Resource> GateSpec::build(const ResourceOptions& options) const {
  validate(fmt::format("resource '{}'", key()));
  return std::make_unique<Gate>(*this, options);
}

// The type, and a family whose attention goes through it (the tts family
// otherwise), registered once per process.
void register_gate() {
  static const bool registered = [] {
    register_resource_type(
        {"test_gate",
         [](const YAML::Node& cfg, YamlContext& ctx, const std::string& path,
            const ResourceSite& site) -> std::unique_ptr<ResourceSpec> {
           // Its own field, then the bounded resource's fields as that type reads them.
           int64_t n = 1;
           YAML::Node rest = YAML::Clone(cfg);
           if (cfg.IsMap() && cfg["admit_at_once"]) {
             if (!read_yaml(cfg["admit_at_once"], ctx, path + ".admit_at_once", n, Range{1, 64})) return nullptr;
             rest.remove("admit_at_once");
           }
           std::unique_ptr<ResourceSpec> inner = find_resource_type("bounded_kv")->read(rest, ctx, path, site);
           if (!inner) return nullptr;
           return std::make_unique<GateSpec>(dynamic_cast<const BoundedKVSpec&>(*inner), n);
         },
         {}});
    ModelFamily f = tts_family();
    f.name = "test_gated_tts";
    f.resource_type = "test_gate";
    register_family(std::move(f));
    return true;
  }();
  (void)registered;
}

const char* kManifest = R"(name: gated
kind: KIND
architecture:
  layers: 2
  width: 64
  heads: 2
  kv_heads: 1
  head_dim: 32
  mlp_width: 96
  vocab_size: 97
  end_token: 96
weights:
  dummy_seed: 11
resources:
  - resource_key: voice_kv
    type: TYPE
    nodes: attn.*
    config:
      GATE
      rows_per_request: 1
      max_source_len: 16
      retention: {sink: 2, window: 14}
      max_slots: 4
)";

std::string manifest(const std::string& kind, const std::string& type, const std::string& gate) {
  std::string m = kManifest;
  m.replace(m.find("KIND"), 4, kind);
  m.replace(m.find("TYPE"), 4, type);
  m.replace(m.find("GATE"), 4, gate);
  return m;
}

const char* kDeployment =
    "model: m.yaml\nbackend: reference\nworkload:\n  voices:\n    alice: {seed: 1, length: 6}\n  requests:\n"
    "    count: 0\n    voices: [alice]\n    prompt_tokens: 3\n    max_tokens: 4\n";

// The greedy tokens of three requests submitted together.
std::map<std::string, std::vector<int32_t>> serve(const ResolvedDeployment& d) {
  auto engine = Engine::create(d);
  for (const char* id : {"a", "b", "c"})
    engine->submit(json{{"id", id}, {"voice", "alice"}, {"prompt", {5, 6, 7 + (id[0] - 'a')}}, {"max_tokens", 12},
                        {"sampling", {{"temperature", 0.0}}}});
  return test::streamed_tokens(*engine);
}

}  // namespace

TEST_CASE("a resource type registered in a test is read from a manifest, planned, tuned and driven by the scheduler") {
  register_gate();
  CHECK_THROWS_WITH_AS(register_resource_type({"test_gate", find_resource_type("test_gate")->read, {}}),
                       "register_resource_type: resource type 'test_gate' is already registered", ConfigError);
  CHECK_THROWS_WITH_AS(register_resource_type({"no_reader", {}, {}}),
                       "register_resource_type: resource type 'no_reader' has no reader", ConfigError);
  test::TempDir dir;
  dir.write("c.yaml", kDeployment);

  // The same model through the shipped bounded resource: what the gate must reproduce.
  dir.write("m.yaml", manifest("tts", "bounded_kv", "min_source_len: 0"));
  const auto plain = serve(test::load_or_fail(dir.path / "c.yaml"));
  REQUIRE(plain.size() == 3);

  for (const int64_t at_once : {1, 2}) {
    CAPTURE(at_once);
    dir.write("m.yaml", manifest("test_gated_tts", "test_gate", fmt::format("admit_at_once: {}", at_once)));
    const ResolvedDeployment d = test::load_or_fail(dir.path / "c.yaml");
    REQUIRE(d.model.resources.size() == 1);
    CHECK(d.model.resources[0].spec->type() == "test_gate");
    CHECK(d.model.resources[0].spec->pool_size() == at_once);

    // mstar-check's plan holds the type's own entry; its text, with no
    // renderer registered, the bytes.
    const json plan = memory_plan_json(d);
    const json& entry = plan["resources"][0];
    CHECK(entry["type"] == "test_gate");
    CHECK(entry["config"]["admit_at_once"] == at_once);
    CHECK(entry["total_bytes"].get<uint64_t>() > 0);
    CHECK(memory_plan_text(plan).find("resource    voice_kv (test_gate, 2 layers, f32)\n  bytes     ") !=
          std::string::npos);

    gate_log = {};
    const auto gated = serve(d);
    // Every request ran to its end, never more than the gate admits at once,
    // the others waiting their turn; each planned step was committed.
    CHECK(gated == plain);
    CHECK(gate_log.most_claimed == static_cast<size_t>(at_once));
    CHECK(gate_log.retries > 0);
    CHECK(gate_log.plans > 0);
    CHECK(gate_log.commits == gate_log.plans);
    CHECK(gate_log.removes >= 3);
  }

  // A deployment tunes the one field the type names, and no other.
  dir.write("m.yaml", manifest("test_gated_tts", "test_gate", "admit_at_once: 1"));
  const ResolvedDeployment three = test::load_or_fail(dir.path / "c.yaml", {"resources.voice_kv.admit_at_once=3"});
  CHECK(three.model.resources[0].spec->pool_size() == 3);
  gate_log = {};
  CHECK(serve(three) == plain);
  CHECK(gate_log.most_claimed == 3);
  Diagnostics diags;
  CHECK_FALSE(load_deployment(dir.path / "c.yaml", {parse_set("resources.voice_kv.max_slots=3")}, diags));
  CHECK(diags.str().find("a deployment may not change 'max_slots': a test_gate resource accepts only admit_at_once") !=
        std::string::npos);

  // The family attends through the gate only, and a mistyped name lists every registered type.
  dir.write("m.yaml", manifest("test_gated_tts", "bounded_kv", "min_source_len: 0"));
  Diagnostics wrong;
  CHECK_FALSE(load_deployment(dir.path / "c.yaml", {}, wrong));
  CHECK(wrong.str().find("a model of kind test_gated_tts attends through test_gate, not bounded_kv") != std::string::npos);
  dir.write("m.yaml", manifest("test_gated_tts", "test_gat", "admit_at_once: 1"));
  Diagnostics typo;
  CHECK_FALSE(load_deployment(dir.path / "c.yaml", {}, typo));
  CHECK(typo.str().find("unknown resource type 'test_gat' (expected bounded_kv or ring_kv or test_gate); did you mean "
                        "'test_gate'?") != std::string::npos);
}
