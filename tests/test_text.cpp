// Text in: a model that names a tokenizer takes requests and voices as text
// (encoded exactly as token ids would be given), and its chunks carry their
// decoded text, never splitting a character.
#include <doctest/doctest.h>

#include <filesystem>
#include <fstream>

#include "config/memory_plan.h"
#include "engine/engine.h"
#include "engine/program.h"
#include "tokenizer/tokenizer.h"

using namespace mstar;
using nlohmann::json;
namespace fs = std::filesystem;

namespace {

const fs::path kTokenizer = fs::path(MSTAR_TEST_DATA) / "tokenizer" / "llama3-mini";

struct Dir {
  fs::path path;
  Dir() {
    static int n = 0;
    path = fs::temp_directory_path() / fmt::format("mstar-text-test-{}-{}", ::getpid(), n++);
    fs::create_directories(path);
  }
  ~Dir() { fs::remove_all(path); }
};

// A tiny tts model over the llama3-mini vocabulary (4,071 tokens), with or
// without its tokenizer, and one voice.
std::optional<ResolvedDeployment> deploy(const Dir& d, bool with_tokenizer, const std::string& voice, std::string& errors) {
  std::ofstream(d.path / "m.yaml") << fmt::format(
      "name: t\nkind: tts\narchitecture: {{layers: 2, width: 64, heads: 2, kv_heads: 1, head_dim: 32, mlp_width: 64, "
      "vocab_size: 4096, end_token: 4095}}\nweights: {{dummy_seed: 3}}\n{}resources:\n  - resource_key: kv\n"
      "    type: bounded_kv\n    nodes: attn.*\n    config: {{rows_per_request: 1, max_source_len: 64, "
      "retention: {{sink: 4, window: 32}}, query_window: 32}}\n",
      with_tokenizer ? fmt::format("tokenizer: {}\n", kTokenizer.string()) : "");
  std::ofstream(d.path / "c.yaml") << "model: m.yaml\nbackend: cpu\nworkload:\n  chunk_tokens: 3\n  voices:\n    v: "
                                   << voice << "\n";
  Diagnostics diags;
  auto r = load_deployment(d.path / "c.yaml", {}, diags);
  errors = diags.str();
  return r;
}

std::vector<json> run(Engine& e, std::vector<json> requests) {
  for (auto& r : requests) e.submit(std::move(r));
  std::vector<json> out;
  while (!e.idle())
    for (const Event& ev : e.step()) out.push_back(ev.body);
  return out;
}

}  // namespace

TEST_CASE("text: a text request speaks exactly as its token ids would, and chunks carry its decoded text") {
  Dir d;
  std::string errors;
  const auto dep = deploy(d, true, R"({text: "<|s_1|><|s_2|> Hello there.", tokens: [5]})", errors);
  REQUIRE_MESSAGE(dep, errors);
  const Tokenizer tok = Tokenizer::from_file(kTokenizer);
  // The voice's text was encoded with the tokenizer's specials (a BOS), then its ids.
  std::vector<int32_t> voice = tok.encode("<|s_1|><|s_2|> Hello there.", true);
  voice.push_back(5);
  CHECK(dep->deployment.workload["voices"]["v"].get<std::vector<int32_t>>() == voice);

  const std::string text = "How are you? Ünïcödé ✓ 🙂";
  const json sampling{{"temperature", 0.7}, {"seed", 4}};
  auto a = Engine::create(*dep);
  const auto by_text = run(*a, {json{{"id", "r"}, {"voice", "v"}, {"text", text}, {"max_tokens", 20}, {"sampling", sampling}}});
  auto b = Engine::create(*dep);
  const auto by_ids = run(*b, {json{{"id", "r"}, {"voice", "v"}, {"prompt", tok.encode(text, false)}, {"max_tokens", 20},
                                    {"sampling", sampling}}});
  CHECK(by_text == by_ids);
  std::vector<int32_t> all;
  std::string streamed;
  for (const json& e : by_text)
    if (e["event"] == "chunk") {
      for (const auto& t : e["tokens"]) all.push_back(t.get<int32_t>());
      streamed += e["text"].get<std::string>();
    }
  CHECK(all.size() == 20u);
  CHECK(streamed == tok.decode(all));
}

TEST_CASE("text: refused where it cannot be honoured, alone, with the reason") {
  Dir d;
  std::string errors;
  auto with = deploy(d, true, "{tokens: [1, 2, 3]}", errors);
  REQUIRE_MESSAGE(with, errors);
  auto e = Engine::create(*with);
  const auto events = run(*e, {json{{"id", "both"}, {"voice", "v"}, {"text", "a"}, {"prompt", {1}}, {"max_tokens", 2}},
                               json{{"id", "bad"}, {"voice", "v"}, {"text", "ok \xff no"}, {"max_tokens", 2}},
                               json{{"id", "good"}, {"voice", "v"}, {"text", "fine"}, {"max_tokens", 2}}});
  std::map<std::string, json> last;
  for (const json& ev : events) last[ev["id"]] = ev;
  CHECK(last["both"]["message"] == "request 'both': give exactly one of 'prompt' (token ids) or 'text'");
  CHECK(last["bad"]["message"].get<std::string>().find("request 'bad': text:") == 0);
  CHECK(last["bad"]["message"] == "request 'bad': text: text is not valid UTF-8: byte 0xFF at offset 3");
  CHECK(last["good"]["reason"] == "max_tokens");

  // The plan reports the tokenizer.
  const json plan = memory_plan_json(*with);
  CHECK(plan["model"]["tokenizer"]["vocab_size"] == 4071);
  CHECK(plan["model"]["tokenizer"]["adds_bos"] == true);

  // Without a tokenizer: text requests fail alone, text voices refuse the deployment.
  Dir d2;
  auto without = deploy(d2, false, "{tokens: [1, 2, 3]}", errors);
  REQUIRE_MESSAGE(without, errors);
  auto e2 = Engine::create(*without);
  const auto ev2 = run(*e2, {json{{"id", "t"}, {"voice", "v"}, {"text", "hi"}, {"max_tokens", 2}}});
  CHECK(ev2[0]["message"] == "request 't': 'text' needs a model with a tokenizer; this one takes a 'prompt' of token ids");
  Dir d3;
  CHECK(!deploy(d3, false, R"({text: "hello"})", errors));
  CHECK(errors.find("workload.voices.v.text: the model has no tokenizer") != std::string::npos);
}
