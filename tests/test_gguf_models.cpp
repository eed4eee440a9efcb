// llama and qwen2 checkpoints as GGUF files, written by the independent
// converter (tools/hf_to_gguf.py: numpy, from the GGUF and ggml
// definitions, the same file llama.cpp reads; docs/gguf.md):
//  - the goldens' folders converted in their own dtype give the golden
//    logits and tokens (the converter permutes llama's q and k rows into
//    llama.cpp's rotary order and stores llama3 scaling as rope_freqs; the
//    loader undoes both);
//  - quantised files give the logits of their own weights dequantised to
//    f32 and written back as a Hugging Face folder, on every host backend:
//    the products read the blocks without a float copy of the matrix;
//  - every block type dequantises bit-identical to the independent reader
//    (tools/gguf_dump.py).
#include <doctest/doctest.h>

#include <cctype>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>

#include "backends.h"
#include "checkpoints.h"
#include "config/gguf_export.h"
#include "config/model_deployment.h"
#include "core/errors.h"
#include "core/gguf.h"
#include "engine/program.h"
#include "kernels/cpu/isa.h"
#include "models/families/hf_decoder.h"
#include "models/weights.h"
#include "support.h"
#include "temp_dir.h"
#include "tokenizer/tokenizer.h"

using namespace mstar;
namespace fs = std::filesystem;

namespace {

const fs::path kData = fs::path(MSTAR_TEST_DATA) / "hf";
const fs::path kTools = fs::path(MSTAR_SOURCE_DIR) / "tools";

// Runs a tool of tools/ under Python, its output in `dir`; the test fails,
// showing the output, when it does.
void python(const std::string& args, const test::TempDir& dir) {
  const std::string log = dir / "python.log";
  const std::string cmd = fmt::format("{} {} > {} 2>&1", MSTAR_PYTHON, args, log);
  const int rc = std::system(cmd.c_str());
  std::ifstream in(log);
  const std::string out((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  INFO(cmd, "\n", out);
  REQUIRE(rc == 0);
}

fs::path convert(const fs::path& folder, const std::string& outtype, const test::TempDir& dir) {
  const fs::path out = dir.path / fmt::format("{}-{}.gguf", folder.filename().string(), outtype);
  python(
      fmt::format("{} {} {} --outtype {}", (kTools / "hf_to_gguf.py").string(), folder.string(), out.string(), outtype),
      dir);
  return out;
}

// A llama checkpoint folder whose every matrix row is whole blocks of 256
// (so each K type applies, with no fallback to f16): the documented dummy
// initialisation, in f32.
fs::path blockable_llama(const test::TempDir& dir) {
  const fs::path folder = dir.path / "llama-256";
  fs::create_directories(folder);
  std::ofstream(folder / "config.json") << R"({"model_type": "llama", "hidden_size": 256, "intermediate_size": 512,
    "num_hidden_layers": 2, "num_attention_heads": 4, "num_key_value_heads": 2, "rms_norm_eps": 1e-5,
    "vocab_size": 160, "rope_theta": 10000.0, "tie_word_embeddings": false, "bos_token_id": 1, "eos_token_id": 2})";
  HfArchitecture a;
  a.shape.layers = 2, a.shape.width = 256, a.shape.heads = 4, a.shape.kv_heads = 2, a.shape.head_dim = 64;
  a.shape.mlp_width = 512;
  a.vocab = 160;
  const Weights w = Weights::dummy(a.tensors(), 7);
  write_weights(w, a.tensors(), folder / "model.safetensors", DType::f32);
  return folder;
}

constexpr float kTol = 1e-5f;

// The golden protocol over the manifest's model on backend b: the golden's
// tokens, and its first logits within kTol.
void check_golden(const ModelManifest& m, Backend b, const nlohmann::json& golden) {
  test::Served s(m, b);
  std::vector<std::vector<float>> logits;
  const auto tokens =
      test::run_greedy(s, golden["voice"].get<std::vector<int32_t>>(), golden["prompt"].get<std::vector<int32_t>>(),
                       golden["full"]["steps"].get<int>(), logits);
  CHECK(tokens == golden["full"]["tokens"].get<std::vector<int32_t>>());
  CHECK(test::max_diff(logits[0], golden["full"]["logits"]) <= kTol);
}

}  // namespace

TEST_CASE("gguf: the goldens converted to GGUF in their own dtype give the reference's logits and tokens") {
  test::TempDir dir;
  for (const char* name : {"llama-gqa-bf16", "llama-tied-f32", "qwen2-bias-bf16"}) {
    CAPTURE(name);
    const nlohmann::json golden = test::load_json(kData / name / "golden.json");
    const fs::path file = convert(kData / name, std::string_view(name).ends_with("f32") ? "f32" : "bf16", dir);
    const std::string kind = golden["config"]["model_type"];
    test::Loaded l = test::load(file, kind, "stream", 0, 64);
    REQUIRE_MESSAGE(l.manifest, l.errors);
    // The architecture read from the metadata is the folder's.
    test::Loaded folder = test::load(kData / name, kind, "stream", 0, 64);
    REQUIRE_MESSAGE(folder.manifest, folder.errors);
    const auto& g = dynamic_cast<const HfArchitecture&>(*l.manifest->arch);
    const auto& h = dynamic_cast<const HfArchitecture&>(*folder.manifest->arch);
    CHECK(g.shape.width == h.shape.width);
    CHECK(g.shape.heads == h.shape.heads);
    CHECK(g.shape.kv_heads == h.shape.kv_heads);
    CHECK(g.shape.head_dim == h.shape.head_dim);
    CHECK(g.shape.norm_eps == doctest::Approx(h.shape.norm_eps).epsilon(1e-6));
    CHECK(g.tie_word_embeddings == h.tie_word_embeddings);
    CHECK(g.vocab == h.vocab);
    const std::vector<double> gf = g.inv_freq(), hf = h.inv_freq();
    REQUIRE(gf.size() == hf.size());
    for (size_t i = 0; i < gf.size(); ++i) CHECK(gf[i] == doctest::Approx(hf[i]).epsilon(1e-6));
    for (Backend b : test::host_backends()) {
      CAPTURE(to_string(b));
      check_golden(*l.manifest, b, golden);
    }
  }
}

// Tolerance: the quantised (or f16) model and its dequantised twin multiply
// the same f32 values (a block widened exactly), summed in another order.
TEST_CASE("gguf: quantised files give the logits of their weights dequantised to f32, on every host backend") {
  test::TempDir dir;
  const fs::path folder = blockable_llama(dir);
  const std::vector<int32_t> voice = {3, 5, 7, 9, 11, 13, 15, 17, 19, 21}, prompt = {30, 31, 32};
  for (const char* outtype : {"f16", "q8_0", "q4_0", "q4_k", "q5_k", "q6_k", "q4_k_m"}) {
    CAPTURE(outtype);
    const fs::path file = convert(folder, outtype, dir);
    test::Loaded q = test::load(file, "llama", "stream", 0, 64);
    REQUIRE_MESSAGE(q.manifest, q.errors);
    // Every matrix is stored quantised: the mix's types, or the one named.
    const Weights stored = q.manifest->load_weights(Backend::reference);
    const std::string want = std::string(outtype) == "q4_k_m" ? "q4_k" : outtype;
    CHECK(to_string(stored.get("model.layers.1.mlp.up_proj.weight").dtype) == want);
    CHECK(to_string(stored.get("model.layers.0.self_attn.q_proj.weight").dtype) == want);
    // The twin: the same values as f32, in a folder with the same config.
    const fs::path twin = dir.path / fmt::format("twin-{}", outtype);
    fs::create_directories(twin);
    fs::copy_file(folder / "config.json", twin / "config.json");
    write_weights(stored, q.manifest->arch->tensors(), twin / "model.safetensors", DType::f32);
    test::Loaded f = test::load(twin, "llama", "stream", 0, 64);
    REQUIRE_MESSAGE(f.manifest, f.errors);
    for (Backend b : test::host_backends()) {
      CAPTURE(to_string(b));
      test::Served sq(*q.manifest, b), sf(*f.manifest, b);
      std::vector<std::vector<float>> lq, lf;
      const auto tq = test::run_greedy(sq, voice, prompt, 4, lq);
      const auto tf = test::run_greedy(sf, voice, prompt, 4, lf);
      CHECK(tq == tf);
      for (size_t k = 0; k < lq.size(); ++k) CHECK(test::max_abs_diff(lq[k], lf[k]) <= kTol);
    }
  }
}

TEST_CASE("gguf: every block type dequantises bit-identical to the independent reader") {
  test::TempDir dir;
  const fs::path folder = blockable_llama(dir);
  for (const char* outtype : {"q8_0", "q4_0", "q4_k", "q5_k", "q6_k"}) {
    CAPTURE(outtype);
    const fs::path file = convert(folder, outtype, dir);
    const GgufFile g = read_gguf(file);
    for (const char* name : {"blk.0.ffn_up.weight", "token_embd.weight"}) {
      CAPTURE(name);
      const GgufTensor* t = g.tensor(name);
      REQUIRE(t);
      CHECK(to_string(t->dtype) == outtype);
      const fs::path dumped = dir.path / "dumped.f32";
      python(fmt::format("{} {} --tensor {} --out {}", (kTools / "gguf_dump.py").string(), file.string(), name,
                         dumped.string()),
             dir);
      const int64_t n = t->dims[0] * t->dims[1];
      std::vector<float> want(static_cast<size_t>(n)), got(static_cast<size_t>(n));
      std::ifstream(dumped, std::ios::binary).read(reinterpret_cast<char*>(want.data()), n * 4);
      std::vector<unsigned char> raw(t->bytes);
      std::ifstream in(file, std::ios::binary);
      in.seekg(static_cast<std::streamoff>(t->offset));
      in.read(reinterpret_cast<char*>(raw.data()), static_cast<std::streamsize>(raw.size()));
      dtype_traits(t->dtype).to_f32(raw.data(), got.data(), n);
      CHECK(std::memcmp(want.data(), got.data(), want.size() * 4) == 0);
    }
  }
}

// The converter writes a tokenizer.json's vocabulary, merges, token types
// and pre-tokenizer name into the file (tools/hf_to_gguf.py --tokenizer-dir);
// read back, it must give the same ids and text on the hard-string corpus.
TEST_CASE("gguf: the tokenizer a GGUF carries gives its tokenizer.json's ids and text, and serves the manifest") {
  const fs::path tokenizers = fs::path(MSTAR_TEST_DATA) / "tokenizer";
  const nlohmann::json corpus = test::load_json(tokenizers / "corpus.json");
  test::TempDir dir;
  for (const auto& [name, kind] :
       {std::pair<std::string, std::string>{"llama3-mini", "llama"}, {"qwen2-mini", "qwen2"}}) {
    CAPTURE(name);
    const Tokenizer json_tok = Tokenizer::from_file(tokenizers / name);
    // A small checkpoint whose embedding has a row for every token.
    const fs::path folder = dir.path / name;
    fs::create_directories(folder);
    HfArchitecture a;
    a.shape.layers = 1, a.shape.width = 32, a.shape.heads = 2, a.shape.kv_heads = 2, a.shape.head_dim = 16;
    a.shape.mlp_width = 64;
    a.shape.qkv_bias = kind == "qwen2";
    a.vocab = static_cast<int64_t>(json_tok.vocab_size());
    a.tie_word_embeddings = true;
    std::ofstream(folder / "config.json")
        << nlohmann::json{{"model_type", kind},     {"hidden_size", 32},        {"intermediate_size", 64},
                          {"num_hidden_layers", 1}, {"num_attention_heads", 2}, {"num_key_value_heads", 2},
                          {"rms_norm_eps", 1e-6},   {"vocab_size", a.vocab},    {"tie_word_embeddings", true}};
    write_weights(Weights::dummy(a.tensors(), 1), a.tensors(), folder / "model.safetensors", DType::f32);
    const fs::path file = dir.path / (name + ".gguf");
    python(fmt::format("{} {} {} --outtype f32 --tokenizer hf --tokenizer-dir {}", (kTools / "hf_to_gguf.py").string(),
                       folder.string(), file.string(), (tokenizers / name).string()),
           dir);
    // mstar-quantize writes the same tokenizer from a folder that holds it.
    for (const char* f : {"tokenizer.json", "tokenizer_config.json"}) fs::copy_file(tokenizers / name / f, folder / f);
    const fs::path ours = dir.path / (name + "-ours.gguf");
    CHECK(export_gguf(folder, ours, {DType::f32}).tokenizer);
    const Tokenizer ours_tok = Tokenizer::from_file(ours);
    const Tokenizer gguf_tok = Tokenizer::from_file(file);
    CHECK(gguf_tok.vocab_size() == json_tok.vocab_size());
    CHECK(gguf_tok.bos_id() == json_tok.bos_id());
    CHECK(gguf_tok.eos_id() == json_tok.eos_id());
    CHECK(gguf_tok.adds_bos() == json_tok.adds_bos());
    for (const auto& s : corpus) {
      const std::string text = s.get<std::string>();
      CAPTURE(text);
      for (bool special : {true, false}) {
        const std::vector<int32_t> ids = json_tok.encode(text, special);
        REQUIRE(gguf_tok.encode(text, special) == ids);
        REQUIRE(ours_tok.encode(text, special) == ids);
        CHECK(gguf_tok.decode(ids) == json_tok.decode(ids));
      }
    }
    // A manifest naming the file takes its tokenizer.
    test::Loaded l = test::load(file, kind, "stream", 0, 8);
    REQUIRE_MESSAGE(l.manifest, l.errors);
    REQUIRE(l.manifest->tokenizer);
    CHECK(l.manifest->tokenizer->encode("hello there") == json_tok.encode("hello there"));
  }
}

// mstar-quantize's writer against the independent converter: the same
// checkpoint written by both holds the same tensors, byte for byte (the
// converter's Q8_0 and Q4_0 are ggml's reference quantisers, written from
// the format in numpy: tools/gguf_blocks.py), and the same architecture.
TEST_CASE("gguf: mstar-quantize writes the tensors the independent converter writes, byte for byte") {
  test::TempDir dir;
  const fs::path folder = blockable_llama(dir);
  for (const char* type : {"F32", "F16", "Q8_0", "Q4_0", "Q4_K", "Q5_K", "Q6_K", "Q4_K_M"}) {
    CAPTURE(type);
    const fs::path ours = dir.path / fmt::format("ours-{}.gguf", type);
    const GgufExport r = export_gguf(folder, ours, gguf_export_types(type, "--type"));
    CHECK(r.as_f16 == 0);
    CHECK(r.in_type == 2 + 7 * 2);
    std::string lower = type;
    for (char& c : lower) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    const GgufFile a = read_gguf(ours), b = read_gguf(convert(folder, lower, dir));
    REQUIRE(a.tensors.size() == b.tensors.size());
    for (const GgufTensor& t : a.tensors) {
      CAPTURE(t.name);
      const GgufTensor* u = b.tensor(t.name);
      REQUIRE(u);
      CHECK(t.dims == u->dims);
      CHECK(t.dtype == u->dtype);
      REQUIRE(t.bytes == u->bytes);
      std::vector<char> x(t.bytes), y(t.bytes);
      std::ifstream(ours, std::ios::binary).seekg(static_cast<std::streamoff>(t.offset)).read(x.data(), x.size());
      std::ifstream(b.path, std::ios::binary).seekg(static_cast<std::streamoff>(u->offset)).read(y.data(), y.size());
      CHECK(x == y);
    }
    for (const char* key :
         {"general.architecture", "llama.block_count", "llama.embedding_length", "llama.attention.head_count_kv",
          "llama.attention.layer_norm_rms_epsilon", "llama.rope.freq_base", "general.file_type"}) {
      CAPTURE(key);
      REQUIRE(a.find(key));
      REQUIRE(b.find(key));
      CHECK(a.find(key)->describe() == b.find(key)->describe());
    }
  }
  CHECK_THROWS_WITH_AS(gguf_export_types("Q3_K", "--type"),
                       "--type: 'Q3_K' is not a type mstar writes (F32, F16, BF16, Q8_0, Q4_0, Q4_K, Q5_K, Q6_K or "
                       "Q4_K_M)",
                       ConfigError);
}

// The goldens written by mstar-quantize in f32 (llama3 scaling as
// rope_freqs, llama's rows interleaved, then undone by the loader) read
// back to the golden tokens.
TEST_CASE("gguf: the goldens written by mstar-quantize read back to the reference's tokens") {
  test::TempDir dir;
  for (const char* name : {"llama-gqa-bf16", "llama-tied-f32", "qwen2-bias-bf16"}) {
    CAPTURE(name);
    const nlohmann::json golden = test::load_json(kData / name / "golden.json");
    const fs::path file = dir.path / fmt::format("{}.gguf", name);
    (void)export_gguf(kData / name, file, {DType::f32});
    test::Loaded l = test::load(file, golden["config"]["model_type"], "stream", 0, 64);
    REQUIRE_MESSAGE(l.manifest, l.errors);
    // Without a tokenizer the file still carries BOS and the first EOS.
    test::Loaded folder = test::load(kData / name, golden["config"]["model_type"], "stream", 0, 64);
    REQUIRE_MESSAGE(folder.manifest, folder.errors);
    const auto& g = dynamic_cast<const HfArchitecture&>(*l.manifest->arch);
    const auto& h = dynamic_cast<const HfArchitecture&>(*folder.manifest->arch);
    CHECK(g.bos == h.bos);
    REQUIRE(!g.eos.empty());
    CHECK(g.eos[0] == h.eos[0]);
    check_golden(*l.manifest, Backend::cpu, golden);
  }
}

// --model PATH (config/model_deployment.h) on a GGUF file: the deployment
// the documented defaults give, which loads as mstar-run loads it. An f32
// file keeps f32 activations.
TEST_CASE("gguf: --model on a GGUF file gives a deployment with the documented defaults") {
  test::TempDir dir;
  const fs::path folder = blockable_llama(dir);
  const fs::path file = convert(folder, "q8_0", dir);
  {
    test::TempDir out;
    std::vector<std::string> f32_chosen;
    Diagnostics fd;
    const std::optional<ResolvedDeployment> f =
        load_deployment(write_model_deployment(convert(folder, "f32", dir), out.path, f32_chosen), {}, fd);
    REQUIRE_MESSAGE(f, fd.str());
    CHECK(f->deployment.activations == DType::f32);
  }
  std::vector<std::string> chosen;
  const fs::path config = write_model_deployment(file, dir.path, chosen);
  Diagnostics d;
  const std::optional<ResolvedDeployment> r = load_deployment(config, {}, d);
  REQUIRE_MESSAGE(r, d.str());
  // On the cpu backend with vector bodies a quantised file's products take
  // activations quantised to q8_0 (integer products), said as a fifth choice.
  const bool cpu = r->deployment.backend == Backend::cpu && kernels::best_cpu_isa() != kernels::CpuIsa::generic;
  REQUIRE(chosen.size() == (cpu ? 5 : 4));
  CHECK(r->deployment.activations == (cpu ? DType::q8_0 : DType::f32));
  if (cpu) CHECK(chosen[4].find("activations q8_0 before the products over block types (q8_0") != std::string::npos);
  // No max_position_embeddings in config.json, so no context_length in the file: 4096.
  CHECK(chosen[0].find("llama checkpoint, context 4096") != std::string::npos);
  CHECK(chosen[1].find("4 sinks + a window of 3004 + a query window of 64, voices up to 1024 tokens") !=
        std::string::npos);
  CHECK(r->model.checkpoint == fs::absolute(file));
  CHECK(r->model.family->name == "llama");
}

// Activations quantised to q8_0 (the deployment's `activations: q8_0`, as
// llama.cpp's CPU products quantise them). Quantising is discontinuous: an
// activation near a rounding boundary takes the neighbouring code when an
// earlier sum differs in its last bit, so two backends (or the integer and
// the widened product) may differ by one step of an activation's scale,
// and this model's random weights carry that to the logits. Measured on the
// first step's logits (magnitudes up to 1.9): against f32 activations 0.014
// (q8_0) to 0.019 (q4_0); cpu against reference up to 0.022 (q4_0). kQ8Tol
// is 0.05; an integer body with each q4_0 code off by one is off by 1.3, the
// logits' own size. The greedy tokens are not compared: this model's
// near-ties part them after one step.
TEST_CASE("gguf: quantised files with activations quantised to q8_0 stay near their f32-activation logits") {
  constexpr double kQ8Tol = 0.05;
  test::TempDir dir;
  const fs::path folder = blockable_llama(dir);
  const std::vector<int32_t> voice = {3, 5, 7, 9, 11, 13, 15, 17, 19, 21}, prompt = {30, 31, 32};
  for (const char* outtype : {"q8_0", "q4_0", "q4_k_m"}) {
    CAPTURE(outtype);
    const fs::path file = convert(folder, outtype, dir);
    test::Loaded q = test::load(file, "llama", "stream", 0, 64);
    REQUIRE_MESSAGE(q.manifest, q.errors);
    std::vector<std::vector<float>> first;  // per host backend: the first step's logits with x quantised
    for (Backend b : test::host_backends()) {
      CAPTURE(to_string(b));
      test::Served s8(*q.manifest, b, DType::q8_0), sf(*q.manifest, b, DType::f32);
      std::vector<std::vector<float>> l8, lf;
      (void)test::run_greedy(s8, voice, prompt, 1, l8);
      (void)test::run_greedy(sf, voice, prompt, 1, lf);
      const double d = test::max_abs_diff(l8[0], lf[0]);
      CHECK(d <= kQ8Tol);
      CHECK(d > 1e-4);  // the activations were quantised
      first.push_back(l8[0]);
    }
    CHECK(test::max_abs_diff(first[0], first[1]) <= kQ8Tol);
  }
}
