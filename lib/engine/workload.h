#pragma once
// Reading a deployment's `workload` block: what every task's reader shares
// (voices, the request generator's common keys). Each program reads its own
// form (speech_program.cpp, frame_program.cpp) into the neutral JSON the
// deployment keeps: {"voices": {name: [ids]}, "settings": {...},
// "requests": {"count": n, "seed", "arrival_every", and the program's keys}}:
// the generator, whose requests the program makes one at a time as they
// arrive (program.h's workload_request).
//
//   workload:
//     chunk_tokens: 8           # speech: tokens per streamed chunk
//     guidance_scale: 1.5       # speech with rows_per_request 2
//     voices:
//       alice: {tokens: [12, 7, 99]}    # inline prompt codec tokens
//       bob: {file: ../voices/bob.txt}  # whitespace-separated tokens
//       carol: {seed: 3, length: 40}    # a seeded random prompt
//       dave: {text: "<|s_12|><|s_40|> Hello.", tokens: [7]}  # text (with the model's tokenizer), then ids
//     requests:
//       count: 16
//       voices: [alice, bob]    # speech: round robin
//       prompt_tokens: 12       # speech: conditioning tokens (seeded)
//       max_tokens: 96          # speech
//       frames: 16              # frames
//       sampling: {temperature: 0.8, top_k: 40, top_p: 0.95}
//       seed: 1                 # request i gets seed + i
//       arrival_every: 1        # steps between arrivals
#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "config/yaml_read.h"
#include "tokenizer/tokenizer.h"

namespace mstar {

// A deterministic token sequence (splitmix64 of seed and index) in [1, vocab).
std::vector<int32_t> seeded_tokens(uint64_t seed, int64_t length, int64_t vocab);

// `voices:`: name -> token ids in [0, vocab); false after reporting problems.
// A voice's text is encoded with `tokenizer` (null: the model has none, and
// text is refused); it starts a stream, so the tokenizer's specials (a BOS)
// are added.
bool read_voices(const YAML::Node& n, YamlContext& ctx, int64_t vocab, const Tokenizer* tokenizer,
                 const std::filesystem::path& dir, nlohmann::json& out);

// The generator keys every task's `requests:` block has.
struct RequestsBlock {
  int64_t count = 0, seed = 1, arrival_every = 0;
};
// Reads `requests:` allowing `keys` beyond count, seed and arrival_every;
// `read` is called for each extra key present.
bool read_requests_block(const YAML::Node& n, YamlContext& ctx, const std::vector<std::string>& keys,
                         RequestsBlock& out, const std::function<bool(const std::string&, const YAML::Node&)>& read);

}  // namespace mstar
