#pragma once
// A llama or qwen2 checkpoint (a Hugging Face folder or a GGUF file)
// written as a GGUF file in the layout llama.cpp's converter writes:
// llama.cpp's tensor names, llama's q and k rows in its interleaved rotary
// order, llama3 scaling as rope_freqs, the tokenizer (from tokenizer.json,
// or the input GGUF's own) as tokenizer.ggml.*, the matrices in the type
// asked for (docs/gguf.md, "Writing"). mstar-quantize.
#include <cstdint>
#include <filesystem>
#include <string>

#include "core/dtype.h"
#include "core/progress.h"

namespace mstar {

struct GgufExport {
  int64_t tensors = 0;
  int64_t in_type = 0;  // matrices written in the type asked for
  int64_t as_f16 = 0;   // matrices whose rows are not whole blocks of it: f16 instead
  uint64_t bytes = 0;   // tensor bytes written
  bool tokenizer = false;
};

// What the matrices are written as: one type, or llama.cpp's Q4_K_M mix.
struct GgufTypes {
  DType matrices = DType::f32;
  // Q6_K for the logits' matrix (the embedding, when tied) and, on the
  // layers llama.cpp's use_more_bits picks (the first and last eighth, every
  // third between), attn_v and ffn_down; Q4_K for the rest.
  bool q4_k_m = false;
};

// The types mstar writes: F32, F16, BF16, Q8_0, Q4_0, Q4_K (or Q4_K_S),
// Q5_K (Q5_K_S), Q6_K, Q4_K_M, in either case. Throws ConfigError naming
// `what` and the text for another.
GgufTypes gguf_export_types(const std::string& text, const std::string& what);

// Reads `in` as its family does (kind from config.json's model_type or the
// GGUF's general.architecture) and writes `out`. Throws ConfigError or
// InputError naming the file and the problem.
GgufExport export_gguf(const std::filesystem::path& in, const std::filesystem::path& out, const GgufTypes& types,
                       const Progress& progress = {});

}  // namespace mstar
