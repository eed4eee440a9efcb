// Manifests, deployments and mstar-check's validation: one test per class of
// error, each with its exact place, and the hostile inputs.
#include <doctest/doctest.h>

#include <filesystem>
#include <fstream>
#include <random>

#include "config/deployment.h"
#include "config/memory_plan.h"
#include "config/yaml_source.h"
#include "core/errors.h"
#include "models/safetensors.h"
#include "models/tensors.h"
#include "models/weights.h"
#include "temp_dir.h"
#include "resources/bounded_kv/manager.h"
#include "resources/ring_kv/manager.h"

using namespace mstar;
namespace fs = std::filesystem;

namespace {

const char* kTtsManifest = R"(name: t
kind: tts
architecture:
  layers: 2
  width: 128
  heads: 2
  kv_heads: 1
  head_dim: 64
  mlp_width: 256
  vocab_size: 64
  end_token: 63
weights:
  dummy_seed: 3
resources:
  - resource_key: voice_kv
    type: bounded_kv
    nodes: attn.*
    config:
      rows_per_request: 1
      max_source_len: 40
      retention: {sink: 4, window: 16}
)";

const char* kWorldManifest = R"(name: w
kind: world
architecture:
  layers: 3
  width: 64
  heads: 2
  kv_heads: 1
  head_dim: 16
  mlp_width: 64
  latent_channels: 4
  control_dim: 2
  frame_height: 2
  frame_width: 2
  tokens_per_frame: 4
  denoise_steps: 2
  rope_time: 2
  rope_height: 3
  rope_width: 3
weights:
  dummy_seed: 3
resources:
  - resource_key: world_kv
    type: ring_kv
    nodes: attn.*
    config:
      num_sessions: 2
      layers:
        pattern:
          every: 3
          global: {ring_frames: 16, ring_buckets: 4, pinned_dilation: 4}
          local: {ring_frames: 4, ring_buckets: 4, pinned_dilation: 1}
)";

const char* kConfig = R"(model: m.yaml
backend: cpu
threads: 1
resources:
  voice_kv: {max_slots: 4}
)";

std::string replace(std::string text, const std::string& from, const std::string& to) {
  const auto at = text.find(from);
  REQUIRE_MESSAGE(at != std::string::npos, "test text has no '" << from << "'");
  return text.replace(at, from.size(), to);
}

using test::TempDir;

struct Result {
  std::optional<ResolvedDeployment> resolved;
  std::string errors;  // diagnostics with the temp dir stripped from paths
};

Result check_files(const TempDir& dir, const std::string& config = "c.yaml", std::vector<std::string> sets = {}) {
  Diagnostics d;
  std::vector<SetOverride> so;
  for (const auto& s : sets) so.push_back(parse_set(s));
  Result r{resolve_deployment(dir.path / config, so, d), d.str()};
  const std::string prefix = dir.path.string() + "/";
  for (size_t at; (at = r.errors.find(prefix)) != std::string::npos;) r.errors.erase(at, prefix.size());
  return r;
}

Result check(const std::string& manifest, const std::string& config = kConfig, std::vector<std::string> sets = {}) {
  TempDir dir;
  dir.write("m.yaml", manifest);
  dir.write("c.yaml", config);
  return check_files(dir, "c.yaml", std::move(sets));
}

std::string world_config(const std::string& overrides = "world_kv: {num_sessions: 2}") {
  return "model: m.yaml\nbackend: reference\nresources:\n  " + overrides + "\n";
}

}  // namespace

TEST_CASE("valid manifests resolve, and overrides land") {
  Result r = check(kTtsManifest);
  REQUIRE_MESSAGE(r.resolved, r.errors);
  const auto& spec = (*r.resolved->model.resources[0].spec.as<BoundedKVSpec>());
  CHECK(spec.config.max_slots == 4);       // from the deployment
  CHECK(spec.config.num_heads == 1);       // from the architecture
  CHECK(spec.config.num_layers == 2);      // one per node
  CHECK(spec.layers == std::vector<int64_t>{0, 1});  // the nodes it serves

  r = check(kWorldManifest, world_config());
  REQUIRE_MESSAGE(r.resolved, r.errors);
  const auto& ring = (*r.resolved->model.resources[0].spec.as<RingKVSpec>()).config;
  CHECK(ring.tokens_per_frame == 4);
  CHECK(ring.layers == std::vector<RingGeometry>{{4, 4, 1}, {4, 4, 1}, {16, 4, 4}});  // every 3rd layer global

  // A rule of the source length, written as text.
  r = check(replace(kTtsManifest, "{sink: 4, window: 16}", "{sink: source + 4, window: 16}"));
  REQUIRE_MESSAGE(r.resolved, r.errors);
  CHECK((*r.resolved->model.resources[0].spec.as<BoundedKVSpec>()).config.retention.sink == SourceAffine{1, 4});
}

TEST_CASE("unknown keys, with a suggestion when one is close") {
  CHECK(check(replace(kTtsManifest, "mlp_width: 256", "mlp_widht: 256")).errors ==
        "m.yaml:4:3: error: architecture: missing required key 'mlp_width' (SwiGLU hidden width)\n"
        "m.yaml:9:3: error: architecture: unknown key 'mlp_widht'; did you mean 'mlp_width'?\n"
        "c.yaml:1:8: error: model: 'm.yaml' is not a valid model manifest (see above)\n");
  CHECK(check(kTtsManifest, replace(kConfig, "threads: 1", "thread: 1\nflavour: spicy")).errors ==
        "c.yaml:3:1: error: config: unknown key 'thread'; did you mean 'threads'?\n"
        "c.yaml:4:1: error: config: unknown key 'flavour'\n");
}

TEST_CASE("wrong types and out-of-range values name the key and the value") {
  CHECK(check(replace(kTtsManifest, "layers: 2", "layers: two")).errors ==
        "m.yaml:4:11: error: architecture.layers: expected an integer, got 'two'\n"
        "c.yaml:1:8: error: model: 'm.yaml' is not a valid model manifest (see above)\n");
  CHECK(check(replace(kTtsManifest, "heads: 2", "heads: 0")).errors ==
        "m.yaml:6:10: error: architecture.heads must be in [1, 1024], got 0\n"
        "c.yaml:1:8: error: model: 'm.yaml' is not a valid model manifest (see above)\n");
  CHECK(check(replace(kTtsManifest, "rows_per_request: 1", "rows_per_request: [1]")).errors ==
        "m.yaml:19:25: error: resources[0].config.rows_per_request: expected an integer, got a sequence\n"
        "c.yaml:1:8: error: model: 'm.yaml' is not a valid model manifest (see above)\n");
  CHECK(check(kTtsManifest, replace(kConfig, "threads: 1", "threads: 99999999999999999999")).errors ==
        "c.yaml:3:10: error: threads: 99999999999999999999 is too large for an integer field (at most "
        "9223372036854775807)\n");
}

TEST_CASE("missing required keys are errors at the mapping that lacks them") {
  CHECK(check(replace(kTtsManifest, "      max_source_len: 40\n", "")).errors ==
        "m.yaml:19:7: error: resources[0].config: missing required key 'max_source_len' (longest shared source "
        "prefix)\n"
        "c.yaml:1:8: error: model: 'm.yaml' is not a valid model manifest (see above)\n");
  CHECK(check(kTtsManifest, "model: m.yaml\n").errors == "c.yaml:1:1: error: config: missing required key 'backend'\n");
}

TEST_CASE("cross-field facts of the architecture") {
  CHECK(check(replace(kTtsManifest, "heads: 2\n  kv_heads: 1", "heads: 2\n  kv_heads: 3")).errors ==
        "m.yaml:7:13: error: architecture.kv_heads 3 must divide heads 2\n"
        "c.yaml:1:8: error: model: 'm.yaml' is not a valid model manifest (see above)\n");
  CHECK(check(replace(kTtsManifest, "width: 128", "width: 120")).errors ==
        "m.yaml:8:13: error: architecture: heads 2 x head_dim 64 = 128 must equal width 120 for a tts model\n"
        "c.yaml:1:8: error: model: 'm.yaml' is not a valid model manifest (see above)\n");
  CHECK(check(replace(kWorldManifest, "tokens_per_frame: 4", "tokens_per_frame: 5"), world_config()).errors ==
        "m.yaml:14:21: error: architecture.tokens_per_frame 5 must equal frame_height 2 x frame_width 2\n"
        "c.yaml:1:8: error: model: 'm.yaml' is not a valid model manifest (see above)\n");
}

TEST_CASE("ring geometry: buckets beyond frames, and one geometry per layer") {
  CHECK(check(replace(kWorldManifest, "ring_frames: 16, ring_buckets: 4", "ring_frames: 16, ring_buckets: 20"),
              world_config())
            .errors ==
        "m.yaml:30:51: error: resources[0].config.layers.pattern.global.ring_buckets 20 exceeds ring_frames 16\n"
        "c.yaml:1:8: error: model: 'm.yaml' is not a valid model manifest (see above)\n");
  const std::string two = R"(layers:
        - {ring_frames: 4, ring_buckets: 4}
        - {ring_frames: 4, ring_buckets: 4})";
  const std::string pattern = kWorldManifest;
  const std::string listed =
      pattern.substr(0, pattern.find("layers:\n        pattern:")) + two + "\n";
  CHECK(check(listed, world_config()).errors ==
        "m.yaml:28:9: error: resources[0].config.layers: 2 geometries for 3 layers\n"
        "c.yaml:1:8: error: model: 'm.yaml' is not a valid model manifest (see above)\n");
}

TEST_CASE("retention that shrinks or outgrows the slot") {
  CHECK(check(replace(kTtsManifest, "{sink: 4, window: 16}", "{sink: 4, window: {per_source: -1, plus: 64}}")).errors ==
        "m.yaml:21:18: error: resources[0].config: retention {sink: 4, window: -1*source+64} shrinks as the source "
        "grows: window 64 at source length 0 but 24 at 40\n"
        "c.yaml:1:8: error: model: 'm.yaml' is not a valid model manifest (see above)\n");
  CHECK(check(replace(replace(kTtsManifest, "{sink: 4, window: 16}", "{sink: 4, window: 4096 * source}"),
                      "max_source_len: 40", "max_source_len: 1000000"))
            .errors ==
        "m.yaml:21:18: error: resources[0].config: retention {sink: 4, window: 4096*source} needs 4096000004 entries "
        "per slot (sink 4 + window 4096000000) at source lengths up to 1000000, more than a slot can address "
        "(1073741823)\n"
        "c.yaml:1:8: error: model: 'm.yaml' is not a valid model manifest (see above)\n");
}

TEST_CASE("derived keys may not be restated in a manifest") {
  CHECK(check(replace(kTtsManifest, "rows_per_request: 1", "rows_per_request: 1\n      num_heads: 1")).errors ==
        "m.yaml:20:18: error: resources[0].config.num_heads is not set here: it comes from the model's architecture\n"
        "c.yaml:1:8: error: model: 'm.yaml' is not a valid model manifest (see above)\n");
}

TEST_CASE("deployment overrides: undeclared resource keys and geometry are refused") {
  CHECK(check(kTtsManifest, replace(kConfig, "voice_kv: {max_slots: 4}", "voice_k: {max_slots: 4}")).errors ==
        "c.yaml:5:12: error: resources.voice_k: the model declares no resource 'voice_k' (it declares: voice_kv); did "
        "you mean 'voice_kv'?\n");
  CHECK(check(kTtsManifest, replace(kConfig, "{max_slots: 4}", "{max_slots: 4, retention: 8}")).errors ==
        "c.yaml:5:39: error: resources.voice_kv.retention: a deployment may not change 'retention': a bounded_kv "
        "resource accepts only max_slots (its geometry is a fact of the model's checkpoint)\n");
  CHECK(check(kTtsManifest, replace(kConfig, "{max_slots: 4}", "{max_slots: 0}")).errors ==
        "c.yaml:5:25: error: resources.voice_kv.max_slots must be in [1, 2147483646], got 0\n");
  CHECK(check(kTtsManifest, replace(kConfig, "{max_slots: 4}", "{max_slots: many}")).errors ==
        "c.yaml:5:25: error: resources.voice_kv.max_slots: expected an integer, got 'many'\n");
  CHECK(check(kWorldManifest, world_config("world_kv: {num_sessions: 2, ring_frames: 64}")).errors ==
        "c.yaml:4:44: error: resources.world_kv.ring_frames: a deployment may not change 'ring_frames': a ring_kv "
        "resource accepts only num_sessions (its geometry is a fact of the model's checkpoint)\n");
}

TEST_CASE("--set overrides are checked exactly like the file") {
  Result r = check(kTtsManifest, kConfig, {"resources.voice_kv.max_slots=9", "backend=reference"});
  REQUIRE_MESSAGE(r.resolved, r.errors);
  CHECK((*r.resolved->model.resources[0].spec.as<BoundedKVSpec>()).config.max_slots == 9);
  CHECK(r.resolved->deployment.backend == Backend::reference);
  CHECK(check(kTtsManifest, kConfig, {"resources.voice_kv.max_slots=lots"}).errors ==
        "--set resources.voice_kv.max_slots=lots: error: resources.voice_kv.max_slots: expected an integer, got "
        "'lots'\n");
  CHECK(check(kTtsManifest, kConfig, {"threds=2"}).errors ==
        "--set threds=2: error: config: unknown key 'threds'; did you mean 'threads'?\n");
  CHECK(check(kTtsManifest, kConfig, {"backend.kind=cpu"}).errors ==
        "--set backend.kind=cpu: error: 'backend' is not a mapping in the file, so it has no key 'kind'\n");
  CHECK_THROWS_AS(parse_set("no-equals-sign"), ConfigError);
  CHECK_THROWS_AS(parse_set("a..b=1"), ConfigError);
}

TEST_CASE("activations: f32 by default, bf16 or q8_0 on request, nothing else") {
  Result r = check(kTtsManifest, kConfig, {});
  REQUIRE_MESSAGE(r.resolved, r.errors);
  CHECK(r.resolved->deployment.activations == DType::f32);
  r = check(kTtsManifest, kConfig, {"activations=bf16"});
  REQUIRE_MESSAGE(r.resolved, r.errors);
  CHECK(r.resolved->deployment.activations == DType::bf16);
  r = check(kTtsManifest, kConfig, {"activations=q8_0"});
  REQUIRE_MESSAGE(r.resolved, r.errors);
  CHECK(r.resolved->deployment.activations == DType::q8_0);
  CHECK(check(kTtsManifest, kConfig, {"activations=f16"}).errors ==
        "--set activations=f16: error: activations: f16 is not offered (f32, bf16 or q8_0)\n");
  CHECK(check(kTtsManifest, kConfig, {"activations=f8"}).errors.find("activations") != std::string::npos);
}

TEST_CASE("weights files: missing, wrong names, dtypes and shapes") {
  TempDir dir;
  const std::string manifest = replace(kTtsManifest, "dummy_seed: 3", "file: w.safetensors");
  dir.write("m.yaml", manifest);
  dir.write("c.yaml", kConfig);
  CHECK(check_files(dir).errors ==
        "m.yaml:13:9: error: weights.file: w.safetensors: no such weights file (or not a regular file)\n"
        "c.yaml:1:8: error: model: 'm.yaml' is not a valid model manifest (see above)\n");

  // The right tensors, then one renamed, one of the wrong dtype, one of the wrong shape.
  ResolvedDeployment base = *check(kTtsManifest).resolved;
  auto tensors = base.model.arch->tensors();
  std::vector<std::vector<unsigned char>> bufs;
  std::vector<TensorData> data;
  for (const auto& t : tensors) {
    bufs.emplace_back(static_cast<size_t>(t.numel()) * 4, 0);
    data.push_back({t.name, DType::f32, t.shape, bufs.back().data(), bufs.back().size()});
  }
  write_safetensors(dir.path / "w.safetensors", data);
  Result ok = check_files(dir);
  CHECK_MESSAGE(ok.resolved, ok.errors);

  data[0].name = "embed.weights";
  data[1].dtype = DType::f16;
  data[1].bytes /= 2;
  data[2].shape = {128, 64};
  write_safetensors(dir.path / "w.safetensors", data);
  CHECK(check_files(dir).errors ==
        "m.yaml:13:9: error: weights.file w.safetensors: tensor 'embed.weight' is missing\n"
        "m.yaml:13:9: error: weights.file w.safetensors: tensor 'layers.0.attn.q.weight' has shape [128, 64] but the "
        "architecture needs [128, 128]\n"
        "m.yaml:13:9: error: weights.file w.safetensors: 1 tensor ('layers.0.attn_norm.weight') is F16 but "
        "weights.dtype says F32\n"
        "m.yaml:13:9: error: weights.file w.safetensors: unexpected tensor 'embed.weights' (not part of this "
        "architecture)\n"
        "c.yaml:1:8: error: model: 'm.yaml' is not a valid model manifest (see above)\n");

  dir.write("w.safetensors", "not a safetensors file at all");
  CHECK(check_files(dir).errors.find("header length") != std::string::npos);
}

TEST_CASE("hostile input: a clear error, never a crash or a hang") {
  auto config_error = [](const std::string& text) { return check(kTtsManifest, text).errors; };
  CHECK(config_error("") == "c.yaml:1:1: error: the file is empty; expected a mapping of keys\n");
  CHECK(config_error("# only a comment\n") == "c.yaml:1:1: error: the file is empty; expected a mapping of keys\n");
  std::string garbage(4096, '\0');
  std::mt19937 gen(1);
  for (auto& c : garbage) c = static_cast<char>(gen());
  garbage[3] = '\0';
  CHECK(config_error(garbage).find("c.yaml:1:") == 0);
  CHECK(config_error(garbage).find("is not valid UTF-8 text (is this a binary file?)") != std::string::npos);
  CHECK(config_error("model: m.yaml\nbackend: \xff\xfe\n") ==
        "c.yaml:2:10: error: byte 0xff at offset 23 is not valid UTF-8 text (is this a binary file?)\n");
  CHECK(config_error("model: m.yaml\nresources:\n\tvoice_kv: {max_slots: 4}\n") ==
        "c.yaml:3:1: error: a tab in indentation; YAML indents with spaces\n");
  CHECK(config_error("model: m.yaml\nbackend: cpu\nbackend: reference\n") ==
        "c.yaml:3:1: error: config: duplicate key 'backend'\n");
  CHECK(config_error("model: m.yaml\nbackend: &b cpu\n") ==
        "c.yaml:2:10: error: anchors and aliases (&name, *name) are not allowed in mstar files; write the value out\n");
  CHECK(config_error("model: m.yaml\nbackend: *b\n") == "c.yaml:2:10: error: the referenced anchor is not defined\n");
  std::string bomb = "a: &a [x, x, x, x, x, x, x, x, x]\n";
  for (char c = 'b'; c <= 'j'; ++c)
    bomb += fmt::format("{}: &{} [*{p}, *{p}, *{p}, *{p}, *{p}, *{p}, *{p}, *{p}, *{p}]\n", c, c,
                        fmt::arg("p", static_cast<char>(c - 1)));
  CHECK(config_error(bomb) ==
        "c.yaml:1:4: error: anchors and aliases (&name, *name) are not allowed in mstar files; write the value out\n");
  CHECK(config_error(std::string(10000, '[') + std::string(10000, ']')).find(
            "error: nesting too deep or input unreadable as YAML") != std::string::npos);
  std::string deep_block;
  for (int i = 0; i < 10000; ++i) deep_block += std::string(static_cast<size_t>(i) * 1, ' ') + "k:\n";
  CHECK(!config_error(deep_block.substr(0, 900000)).empty());
  CHECK(config_error("model: m.yaml\nbackend: cpu\nthreads: 1e400\n") ==
        "c.yaml:3:10: error: threads: expected an integer, got '1e400'\n");
  CHECK(config_error("model: m.yaml\nbackend: cpu\nscheduler: {max_batch: 18446744073709551617}\n") ==
        "c.yaml:3:24: error: scheduler.max_batch: 18446744073709551617 is too large for an integer field (at most "
        "9223372036854775807)\n");
}

TEST_CASE("hostile manifest paths: missing, a directory, a system file, a device") {
  auto model_error = [](const std::string& model) {
    TempDir dir;
    dir.write("c.yaml", "model: " + model + "\nbackend: cpu\n");
    fs::create_directories(dir.path / "adir");
    return check_files(dir).errors;
  };
  CHECK(model_error("nope.yaml") == "nope.yaml: error: no such file\n"
                                    "c.yaml:1:8: error: model: 'nope.yaml' is not a valid model manifest (see above)\n");
  CHECK(model_error("adir") == "adir: error: is a directory, not a YAML file\n"
                               "c.yaml:1:8: error: model: 'adir' is not a valid model manifest (see above)\n");
  CHECK(model_error("/etc/passwd").find("/etc/passwd:1:1: error: manifest: expected a mapping of keys, got 'root:") == 0);
  CHECK(model_error("/dev/zero") == "/dev/zero: error: is not a regular file (a device, socket or pipe?)\n"
                                    "c.yaml:1:8: error: model: '/dev/zero' is not a valid model manifest (see above)\n");
  // A manifest one byte over the 1 MiB limit is refused by its size; one
  // at the limit is read whole (a comment, so it parses as nothing).
  const auto sized = [&](std::size_t bytes) {
    TempDir dir;
    std::string comment(bytes, 'x');
    comment[0] = '#';
    dir.write("m.yaml", comment);
    dir.write("c.yaml", "model: m.yaml\nbackend: cpu\n");
    return check_files(dir).errors;
  };
  CHECK(sized(kMaxConfigBytes + 1).find("m.yaml: error: larger than 1048576 bytes; not a config file\n") == 0);
  CHECK(sized(kMaxConfigBytes).find("larger than") == std::string::npos);
}

TEST_CASE("the memory plan is computed without allocating and matches the resources' own figures") {
  Result r = check(kWorldManifest, world_config("world_kv: {num_sessions: 5}"));
  REQUIRE_MESSAGE(r.resolved, r.errors);
  const auto plan = memory_plan_json(*r.resolved);
  const auto& ring = (*r.resolved->model.resources[0].spec.as<RingKVSpec>()).config;
  // [2, H, (sessions + 1) * (frames + 1) * T, D] x 2 bytes (bf16): two local layers of 5 frames, one global of 17
  const std::size_t want = 2u * 1 * 6 * 4 * 16 * 2 * (5 + 5 + 17);
  CHECK(plan["resources"][0]["total_bytes"].get<std::size_t>() == want);
  CHECK(ring.num_sessions == 5);
  std::size_t weights = 0;
  for (const TensorSpec& t : r.resolved->model.arch->tensors()) weights += static_cast<std::size_t>(t.numel()) * 4;
  CHECK(plan["totals"]["weights_bytes"].get<std::size_t>() == weights);
  CHECK(plan["totals"]["total_bytes"].get<std::size_t>() == want + plan["totals"]["weights_bytes"].get<std::size_t>());
}

TEST_CASE("a manifest or a Hugging Face config.json passed as a deployment is named in one error") {
  {
    TempDir dir;
    dir.write("m.yaml", kTtsManifest);
    const Result r = check_files(dir, "m.yaml");
    CHECK(!r.resolved);
    CHECK(r.errors ==
          "m.yaml:1:1: error: this is a model manifest (it has 'kind' tts), not a deployment: pass a deployment that "
          "names it, such as\n  model: m.yaml\n  backend: cpu\n");
  }
  {
    TempDir dir;
    dir.write("config.json", R"({"architectures": ["Qwen2ForCausalLM"], "model_type": "qwen2", "hidden_size": 64})");
    const Result r = check_files(dir, "config.json");
    CHECK(!r.resolved);
    CHECK(r.errors.find("config.json:1:1: error: this is a Hugging Face config.json, not a deployment") == 0);
    CHECK(r.errors.find("unknown key") == std::string::npos);
  }
  // fp8 is no typo of f32: no suggestion.
  const Result r = check(kTtsManifest, kConfig, {"kv_dtype=fp8"});
  CHECK(r.errors.find("unknown dtype 'fp8'") != std::string::npos);
  CHECK(r.errors.find("did you mean") == std::string::npos);
}

TEST_CASE("weights stored in another dtype than weights.dtype says: one error, with the setting that matches") {
  TempDir dir;
  const Result dummy = check(kTtsManifest);
  REQUIRE_MESSAGE(dummy.resolved, dummy.errors);
  const auto specs = dummy.resolved->model.arch->tensors();
  write_weights(Weights::dummy(specs, 3), specs, dir / "w.safetensors", DType::bf16);
  dir.write("m.yaml", replace(kTtsManifest, "dummy_seed: 3", "{file: w.safetensors, dtype: f32}"));
  dir.write("c.yaml", kConfig);
  const Result r = check_files(dir);
  CHECK(!r.resolved);
  CHECK(r.errors == fmt::format("m.yaml:13:10: error: weights.file w.safetensors: {} tensors ('{}', ...) are BF16 but "
                                "weights.dtype says F32; set weights.dtype: bf16\n"
                                "c.yaml:1:8: error: model: 'm.yaml' is not a valid model manifest (see above)\n",
                                specs.size(), specs.front().name));
}
