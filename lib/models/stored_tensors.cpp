#include "models/stored_tensors.h"

#include <fmt/format.h>

#include <cstring>
#include <regex>

#include "core/errors.h"
#include "core/gguf.h"
#include "models/safetensors.h"

namespace mstar {

namespace {

// One layer's tensors: llama.cpp's name after "blk.N." -> Hugging Face's after "model.layers.N.".
const std::map<std::string, std::string>& layer_names() {
  static const std::map<std::string, std::string> m = {
      {"attn_norm.weight", "input_layernorm.weight"},
      {"attn_q.weight", "self_attn.q_proj.weight"},
      {"attn_k.weight", "self_attn.k_proj.weight"},
      {"attn_v.weight", "self_attn.v_proj.weight"},
      {"attn_q.bias", "self_attn.q_proj.bias"},
      {"attn_k.bias", "self_attn.k_proj.bias"},
      {"attn_v.bias", "self_attn.v_proj.bias"},
      {"attn_output.weight", "self_attn.o_proj.weight"},
      {"ffn_norm.weight", "post_attention_layernorm.weight"},
      {"ffn_gate.weight", "mlp.gate_proj.weight"},
      {"ffn_up.weight", "mlp.up_proj.weight"},
      {"ffn_down.weight", "mlp.down_proj.weight"},
  };
  return m;
}

// A count from the file's metadata that the rotary order needs.
int64_t head_count(const GgufFile& f, const std::string& key) {
  const GgufValue* v = f.find(key);
  if (!v || !v->is_integer() || v->integer < 1)
    throw InputError(fmt::format("{}: metadata '{}' is {} (a positive integer; the llama rotary order needs it)",
                                 f.path.string(), key, v ? v->describe() : "missing"));
  return v->integer;
}

std::map<std::string, StoredTensor> index_gguf(const std::filesystem::path& path) {
  const GgufFile f = read_gguf(path);
  const GgufValue* arch = f.find("general.architecture");
  // llama.cpp's converter writes llama's q and k rows in the interleaved
  // rotary order its llama graph uses; qwen2 keeps Hugging Face's.
  const bool llama = arch && arch->type == GgufType::string && arch->text == "llama";
  std::map<std::string, StoredTensor> out;
  for (const GgufTensor& t : f.tensors) {
    // llama3's rotary scaling, which the architecture reads (docs/gguf.md).
    if (llama && t.name == "rope_freqs.weight") continue;
    // Norms, biases and rope_freqs are vectors, which llama.cpp's
    // converters keep in f32 (or f16): a block type there is no model's.
    if (t.dims.size() == 1 && !is_element_type(t.dtype))
      throw InputError(fmt::format("{}: tensor '{}' is a vector of {} (a norm or bias is f32, f16 or bf16)",
                                   path.string(), t.name, to_string(t.dtype)));
    StoredTensor s;
    s.file = path;
    s.stored_dtype = std::string(to_string(t.dtype));
    s.dtype = t.dtype;
    s.shape.assign(t.dims.rbegin(), t.dims.rend());
    s.offset = t.offset;
    s.bytes = t.bytes;
    const std::string name = hf_name_of_gguf(t.name);
    if (llama && name.ends_with("self_attn.q_proj.weight"))
      s.interleaved_heads = head_count(f, "llama.attention.head_count");
    if (llama && name.ends_with("self_attn.k_proj.weight"))
      s.interleaved_heads = f.find("llama.attention.head_count_kv") ? head_count(f, "llama.attention.head_count_kv")
                                                                    : head_count(f, "llama.attention.head_count");
    if (!out.emplace(name, std::move(s)).second)
      throw InputError(fmt::format("{}: tensor '{}' is named twice (as '{}')", path.string(), name, t.name));
  }
  return out;
}

}  // namespace

std::string hf_name_of_gguf(const std::string& gguf_name) {
  if (gguf_name == "token_embd.weight") return "model.embed_tokens.weight";
  if (gguf_name == "output_norm.weight") return "model.norm.weight";
  if (gguf_name == "output.weight") return "lm_head.weight";
  static const std::regex layer_re(R"(^blk\.(\d{1,6})\.(.+)$)");
  std::smatch m;
  if (std::regex_match(gguf_name, m, layer_re)) {
    auto it = layer_names().find(m[2].str());
    if (it != layer_names().end()) return fmt::format("model.layers.{}.{}", m[1].str(), it->second);
  }
  return gguf_name;
}

void reorder_rope_rows(void* data, int64_t rows, std::size_t row_bytes, int64_t heads, RopeRows to) {
  MSTAR_ASSERT(heads > 0 && rows % (2 * heads) == 0, "reorder_rope_rows: whole heads of row pairs");
  const int64_t per_head = rows / heads, half = per_head / 2;
  auto* bytes = static_cast<unsigned char*>(data);
  std::vector<unsigned char> head(static_cast<std::size_t>(per_head) *
                                  row_bytes);  // [per_head, row_bytes]: one head as stored
  for (int64_t h = 0; h < heads; ++h) {
    unsigned char* at = bytes + static_cast<std::size_t>(h * per_head) * row_bytes;
    std::memcpy(head.data(), at, head.size());
    for (int64_t i = 0; i < half; ++i)
      for (int64_t j = 0; j < 2; ++j) {
        const int64_t in_halves = j * half + i, interleaved = 2 * i + j;
        const bool halves = to == RopeRows::halves;
        std::memcpy(at + static_cast<std::size_t>(halves ? in_halves : interleaved) * row_bytes,
                    head.data() + static_cast<std::size_t>(halves ? interleaved : in_halves) * row_bytes, row_bytes);
      }
  }
}

std::map<std::string, StoredTensor> index_weights(const std::vector<std::filesystem::path>& files) {
  if (files.size() == 1 && is_gguf(files[0])) return index_gguf(files[0]);
  std::map<std::string, StoredTensor> out;
  for (const auto& file : files) {
    if (is_gguf(file))
      throw InputError(
          fmt::format("{}: a GGUF file among safetensors shards (a GGUF checkpoint is one file)", file.string()));
    const SafetensorsHeader h = read_safetensors_header(file);
    for (const auto& [name, e] : h.tensors) {
      StoredTensor s;
      s.file = file;
      s.stored_dtype = e.dtype;
      s.dtype = find_safetensors_dtype(e.dtype);
      s.shape = e.shape;
      s.offset = h.data_offset + e.begin;
      s.bytes = e.end - e.begin;
      auto [it, fresh] = out.emplace(name, std::move(s));
      if (!fresh)
        throw InputError(fmt::format("{}: tensor '{}' is also in {}", file.string(), name, it->second.file.string()));
    }
  }
  return out;
}

}  // namespace mstar
