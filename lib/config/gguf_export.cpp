#include "config/gguf_export.h"

#include <fmt/format.h>

#include <cctype>
#include <cmath>
#include <cstring>

#include "config/checkpoint.h"
#include "core/errors.h"
#include "core/files.h"
#include "core/gguf.h"
#include "core/gguf_write.h"
#include "core/json_text.h"
#include "models/families/hf_decoder.h"
#include "models/family.h"
#include "models/stored_tensors.h"
#include "models/weights.h"
#include "tokenizer/gguf_vocab.h"
#include "tokenizer/tokenizer.h"

namespace mstar {

namespace {

// llama.cpp's file type (llama_ftype) for files of these types.
uint32_t file_type(const GgufTypes& t) {
  if (t.q4_k_m) return 15;
  switch (t.matrices) {
    case DType::f32:
      return 0;
    case DType::f16:
      return 1;
    case DType::q4_0:
      return 2;
    case DType::q8_0:
      return 7;
    case DType::q4_k:
      return 14;  // Q4_K_S: every matrix Q4_K
    case DType::q5_k:
      return 16;  // Q5_K_S
    case DType::q6_k:
      return 18;
    case DType::bf16:
      return 32;
  }
  return 0;
}

// The type tensor `name` (a matrix of `layers` layers) is written in.
DType matrix_type(const GgufTypes& t, const std::string& name, bool tied, int64_t layers) {
  if (!t.q4_k_m) return t.matrices;
  if (name == "lm_head.weight" || (tied && name == "model.embed_tokens.weight")) return DType::q6_k;
  int64_t l = -1;
  if (name.starts_with("model.layers.")) l = std::stoll(name.substr(std::string("model.layers.").size()));
  const bool more_bits = l >= 0 && (l < layers / 8 || l >= 7 * layers / 8 || (l - layers / 8) % 3 == 2);
  if (more_bits && (name.ends_with("self_attn.v_proj.weight") || name.ends_with("mlp.down_proj.weight")))
    return DType::q6_k;
  return DType::q4_k;
}

// llama.cpp's name for a tensor (stored_tensors.h maps the other way).
std::string gguf_name(const std::string& hf, int64_t layers) {
  for (const std::string g : {"token_embd.weight", "output_norm.weight", "output.weight"})
    if (hf_name_of_gguf(g) == hf) return g;
  for (int64_t l = 0; l < layers; ++l)
    for (const char* part : {"attn_norm.weight", "attn_q.weight", "attn_k.weight", "attn_v.weight", "attn_q.bias",
                             "attn_k.bias", "attn_v.bias", "attn_output.weight", "ffn_norm.weight", "ffn_gate.weight",
                             "ffn_up.weight", "ffn_down.weight"}) {
      const std::string g = fmt::format("blk.{}.{}", l, part);
      if (hf_name_of_gguf(g) == hf) return g;
    }
  MSTAR_ASSERT(false, "gguf_export: every tensor of the families has a GGUF name");
  return hf;
}

}  // namespace

GgufTypes gguf_export_types(const std::string& text, const std::string& what) {
  std::string lower = text;
  for (char& c : lower) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  if (lower == "q4_k_m") return {DType::q4_k, true};
  if (lower == "q4_k_s" || lower == "q5_k_s") lower.resize(4);
  const std::optional<DType> t = find_dtype(lower);
  if (!t || !dtype_traits(*t).from_f32 || dtype_traits(*t).gguf < 0)
    throw ConfigError(
        fmt::format("{}: '{}' is not a type mstar writes (F32, F16, BF16, Q8_0, Q4_0, Q4_K, Q5_K, Q6_K "
                    "or Q4_K_M)",
                    what, text));
  return {*t, false};
}

GgufExport export_gguf(const std::filesystem::path& in, const std::filesystem::path& out, const GgufTypes& types,
                       const Progress& progress) {
  const Checkpoint c = read_checkpoint(in, "mstar-quantize");
  const std::string& kind = c.family->name;
  const HfArchitecture& h = *c.arch;
  const Architecture* arch = c.arch.get();
  const TrunkShape& s = h.shape;
  const std::vector<TensorSpec> specs = arch->tensors();
  const Weights w = Weights::load(c.family->weight_files(in), specs, progress);

  const std::string A = kind;
  std::vector<std::pair<std::string, GgufValue>> meta = {
      {"general.architecture", gguf_string(A)},
      {"general.name", gguf_string((std::filesystem::is_directory(in) ? in.filename() : in.stem()).string())},
      {"general.file_type", gguf_u32(file_type(types))},
      {A + ".context_length", gguf_u32(static_cast<uint32_t>(h.context_length))},
      {A + ".embedding_length", gguf_u32(static_cast<uint32_t>(s.width))},
      {A + ".block_count", gguf_u32(static_cast<uint32_t>(s.layers))},
      {A + ".feed_forward_length", gguf_u32(static_cast<uint32_t>(s.mlp_width))},
      {A + ".attention.head_count", gguf_u32(static_cast<uint32_t>(s.heads))},
      {A + ".attention.head_count_kv", gguf_u32(static_cast<uint32_t>(s.kv_heads))},
      {A + ".attention.key_length", gguf_u32(static_cast<uint32_t>(s.head_dim))},
      {A + ".attention.value_length", gguf_u32(static_cast<uint32_t>(s.head_dim))},
      {A + ".attention.layer_norm_rms_epsilon", gguf_f32(static_cast<float>(s.norm_eps))},
      {A + ".rope.freq_base", gguf_f32(static_cast<float>(h.rope_theta))},
      {A + ".rope.dimension_count", gguf_u32(static_cast<uint32_t>(s.head_dim))},
      {A + ".vocab_size", gguf_u32(static_cast<uint32_t>(h.vocab))},
  };
  if (!is_element_type(types.matrices)) meta.emplace_back("general.quantization_version", gguf_u32(2));
  if (h.rope_scaling.type == "linear") {
    meta.emplace_back(A + ".rope.scaling.type", gguf_string("linear"));
    meta.emplace_back(A + ".rope.scaling.factor", gguf_f32(static_cast<float>(h.rope_scaling.factor)));
  }

  // The tokenizer: the input GGUF's own keys, or the folder's tokenizer.json.
  GgufExport r;
  std::error_code ec;
  if (std::filesystem::is_regular_file(in, ec)) {
    const GgufFile f = read_gguf(in);
    for (const auto& [k, v] : f.metadata)
      if (k.starts_with("tokenizer.")) {
        meta.emplace_back(k, v);
        r.tokenizer = true;
      }
  } else if (std::filesystem::exists(in / "tokenizer.json", ec)) {
    const std::filesystem::path tj = in / "tokenizer.json";
    const nlohmann::json j = parse_json(read_regular_file(tj, std::size_t{512} << 20, tj.string()), tj.string(), 64);
    const Tokenizer tok = Tokenizer::from_file(in);  // checks what the conversion copies
    // BOS and EOS: config.json's, else the tokenizer's own.
    const std::optional<int32_t> bos = h.bos ? std::optional<int32_t>(static_cast<int32_t>(*h.bos)) : tok.bos_id();
    const std::optional<int32_t> eos = !h.eos.empty() ? std::optional<int32_t>(h.eos[0]) : tok.eos_id();
    for (auto& kv : tok::gguf_tokenizer_metadata(j, tj.string(), kind == "llama" ? "llama-bpe" : "qwen2", h.vocab, bos,
                                                 eos, tok.adds_bos()))
      meta.push_back(std::move(kv));
    r.tokenizer = true;
  } else {
    // No tokenizer, but the ids that start and end a stream are the model's.
    if (h.bos) meta.emplace_back("tokenizer.ggml.bos_token_id", gguf_u32(static_cast<uint32_t>(*h.bos)));
    if (!h.eos.empty()) meta.emplace_back("tokenizer.ggml.eos_token_id", gguf_u32(static_cast<uint32_t>(h.eos[0])));
  }

  std::vector<std::vector<unsigned char>> held;  // each tensor's bytes as written, until the file is
  held.reserve(specs.size() + 1);
  std::vector<GgufTensorOut> tensors;
  for (const TensorSpec& t : specs) {
    const WeightTensor& src = w.get(t.name);
    std::vector<unsigned char> copy;
    const void* rows = row_major(src, copy);
    const int64_t n = t.numel(), row = t.shape.back();
    std::vector<float> wide(static_cast<std::size_t>(n));
    convert(rows, src.dtype, wide.data(), DType::f32, n);
    DType dt = DType::f32;  // norms and biases stay f32, as llama.cpp's converter keeps them
    if (t.shape.size() == 2) {
      const DType want = matrix_type(types, t.name, h.tie_word_embeddings, s.layers);
      dt = fits_blocks(want, row) ? want : DType::f16;
      ++(dt == want ? r.in_type : r.as_f16);
    }
    held.emplace_back(row_bytes(dt, n));
    convert(wide.data(), DType::f32, held.back().data(), dt, n);
    const bool rotary = kind == "llama" && (t.name.ends_with("q_proj.weight") || t.name.ends_with("k_proj.weight"));
    if (rotary)
      reorder_rope_rows(held.back().data(), t.shape[0], row_bytes(dt, row),
                        t.name.ends_with("q_proj.weight") ? s.heads : s.kv_heads, RopeRows::interleaved);
    tensors.push_back(
        {gguf_name(t.name, s.layers), {t.shape.rbegin(), t.shape.rend()}, dt, held.back().data(), held.back().size()});
    r.bytes += held.back().size();
  }
  // llama3's scaling as its effect: frequency i divided by element i.
  if (h.rope_scaling.type == "llama3" || !h.rope_freq_divisors.empty()) {
    HfArchitecture plain = h;
    plain.rope_scaling = RopeScaling{};
    plain.rope_freq_divisors.clear();
    const std::vector<double> base = plain.inv_freq(), scaled = h.inv_freq();
    std::vector<float> div(base.size());
    for (std::size_t i = 0; i < base.size(); ++i) div[i] = static_cast<float>(base[i] / scaled[i]);
    held.emplace_back(div.size() * 4);
    std::memcpy(held.back().data(), div.data(), held.back().size());
    tensors.push_back(
        {"rope_freqs.weight", {static_cast<int64_t>(div.size())}, DType::f32, held.back().data(), held.back().size()});
  }
  r.tensors = static_cast<int64_t>(tensors.size());
  write_gguf(out, meta, tensors);
  return r;
}

}  // namespace mstar
