#include "models/families/gguf_decoder.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <fstream>
#include <limits>
#include <optional>

#include "core/errors.h"
#include "core/gguf.h"

namespace mstar {

namespace {

// Typed reads of a GGUF file's metadata, each problem reported with the
// file, the key and the value.
class MetadataReader {
 public:
  MetadataReader(const GgufFile& f, const std::function<void(const std::string&)>& error) : f_(f), error_(error) {}
  bool ok() const { return ok_; }
  void fail(const std::string& key, const std::string& why) {
    error_(fmt::format("{}: metadata '{}': {}", f_.path.string(), key, why));
    ok_ = false;
  }
  const GgufValue* find(const std::string& key) const { return f_.find(key); }
  int64_t integer(const std::string& key, int64_t lo, int64_t hi, std::optional<int64_t> dflt = std::nullopt) {
    const GgufValue* v = f_.find(key);
    if (!v) {
      if (!dflt) fail(key, "missing");
      return dflt.value_or(lo);
    }
    if (!v->is_integer() || v->unsigned_above_int64 || v->integer < lo || v->integer > hi) {
      fail(key, fmt::format("expected an integer in [{}, {}], got {}", lo, hi, v->describe()));
      return lo;
    }
    return v->integer;
  }
  double real(const std::string& key, double lo, double hi, std::optional<double> dflt = std::nullopt) {
    const GgufValue* v = f_.find(key);
    if (!v) {
      if (!dflt) fail(key, "missing");
      return dflt.value_or(lo);
    }
    const double x = v->is_real() ? v->real : v->is_integer() ? static_cast<double>(v->integer) : std::nan("");
    if (!std::isfinite(x) || x < lo || x > hi) {
      fail(key, fmt::format("expected a number in [{}, {}], got {}", lo, hi, v->describe()));
      return lo;
    }
    return x;
  }
  std::string string(const std::string& key, const std::string& dflt) {
    const GgufValue* v = f_.find(key);
    if (!v) return dflt;
    if (v->type != GgufType::string) {
      fail(key, fmt::format("expected a string, got {}", v->describe()));
      return dflt;
    }
    return v->text;
  }
  // A token id in [0, vocab), when the key is there.
  std::optional<int32_t> id(const std::string& key, int64_t vocab) {
    if (!f_.find(key)) return std::nullopt;
    const int64_t v = integer(key, 0, vocab - 1);
    return ok_ ? std::optional<int32_t>(static_cast<int32_t>(v)) : std::nullopt;
  }

 private:
  const GgufFile& f_;
  const std::function<void(const std::string&)>& error_;
  bool ok_ = true;
};

// The f32 values of a small tensor, read from the file.
std::vector<float> read_f32_tensor(const GgufFile& f, const GgufTensor& t) {
  std::vector<float> out(static_cast<std::size_t>(t.bytes / 4));
  std::ifstream in(f.path, std::ios::binary);
  in.seekg(static_cast<std::streamoff>(t.offset));
  if (!in.read(reinterpret_cast<char*>(out.data()), static_cast<std::streamsize>(t.bytes)))
    throw InputError(fmt::format("{}: tensor '{}' cannot be read", f.path.string(), t.name));
  return out;
}

}  // namespace

std::unique_ptr<HfArchitecture> read_gguf_architecture(const HfDecoderKind& kind, const std::filesystem::path& path,
                                                       const std::string& positions,
                                                       const std::function<void(const std::string&)>& error) {
  GgufFile f;
  try {
    f = read_gguf(path);
  } catch (const InputError& e) {
    error(e.what());
    return nullptr;
  }
  MetadataReader r(f, error);
  const std::string arch = r.string("general.architecture", "");
  if (arch != kind.model_type) {
    r.fail("general.architecture", arch.empty()
                                       ? fmt::format("missing (a {} GGUF names its architecture)", kind.model_type)
                                       : fmt::format("'{}', but the manifest says kind {}", arch, kind.model_type));
    return nullptr;
  }
  auto a = std::make_unique<HfArchitecture>();
  a->model_type = arch;
  a->checkpoint = path;
  a->positions = positions;
  const std::string p = arch + ".";
  TrunkShape& s = a->shape;
  s.width = r.integer(p + "embedding_length", 1, 1 << 16);
  s.mlp_width = r.integer(p + "feed_forward_length", 1, 1 << 20);
  s.layers = r.integer(p + "block_count", 1, 1024);
  s.heads = r.integer(p + "attention.head_count", 1, 1024);
  if (!r.ok()) return nullptr;
  s.kv_heads = r.integer(p + "attention.head_count_kv", 1, 1024, s.heads);
  if (r.ok() && s.heads % s.kv_heads != 0)
    r.fail(p + "attention.head_count_kv", fmt::format("{} must divide attention.head_count {}", s.kv_heads, s.heads));
  if (r.ok() && !r.find(p + "attention.key_length") && s.width % s.heads != 0)
    r.fail(p + "embedding_length",
           fmt::format("{} is not a multiple of attention.head_count {} and no attention.key_length is given", s.width,
                       s.heads));
  s.head_dim = r.integer(p + "attention.key_length", 2, 1024, s.width / s.heads);
  if (r.ok() && r.integer(p + "attention.value_length", 1, 1024, s.head_dim) != s.head_dim)
    r.fail(p + "attention.value_length", fmt::format("must equal attention.key_length {}", s.head_dim));
  if (r.ok() && s.head_dim % 2 != 0)
    r.fail(p + "attention.key_length", fmt::format("{} must be even for rotary positions", s.head_dim));
  if (r.ok() && r.integer(p + "rope.dimension_count", 2, 1024, s.head_dim) != s.head_dim)
    r.fail(p + "rope.dimension_count",
           fmt::format("rotary positions over part of a head are not supported (the head is {})", s.head_dim));
  s.norm_eps = r.real(p + "attention.layer_norm_rms_epsilon", 1e-12, 1.0);
  s.qkv_bias = kind.qkv_bias;
  a->rope_theta = r.real(p + "rope.freq_base", 1.0, 1e12, 10000.0);
  a->context_length = r.integer(p + "context_length", 1, INT32_MAX, 4096);
  const std::string scaling = r.string(p + "rope.scaling.type", "none");
  if (scaling == "linear") {
    a->rope_scaling.type = "linear";
    a->rope_scaling.factor = r.real(p + "rope.scaling.factor", 1e-6, 1e6);
  } else if (scaling != "none") {
    r.fail(p + "rope.scaling.type",
           fmt::format("'{}' is not supported (mstar runs none and linear, and llama3's as rope_freqs)", scaling));
  }
  // The vocabulary is the embedding table's rows; a stated size must agree.
  const GgufTensor* embed = f.tensor("token_embd.weight");
  if (!embed || embed->dims.size() != 2) {
    error(fmt::format("{}: tensor 'token_embd.weight' is {} (the embedding table, [vocab, width])", path.string(),
                      embed ? fmt::format("of {} dimensions", embed->dims.size()) : "missing"));
    return nullptr;
  }
  a->vocab = embed->dims[1];
  if (a->vocab < 2 || a->vocab > (1 << 24)) {
    error(fmt::format("{}: tensor 'token_embd.weight' has {} rows (a vocabulary of 2 to {})", path.string(), a->vocab,
                      1 << 24));
    return nullptr;
  }
  if (r.find(p + "vocab_size") && r.integer(p + "vocab_size", 1, 1 << 24) != a->vocab)
    r.fail(p + "vocab_size", fmt::format("does not match the {} rows of token_embd.weight", a->vocab));
  // llama.cpp ties the logits to the embedding when the file has no output.weight.
  a->tie_word_embeddings = f.tensor("output.weight") == nullptr;
  // llama3's rotary scaling is stored as its effect: a divisor per frequency.
  if (const GgufTensor* t = f.tensor("rope_freqs.weight"); t && arch == "llama" && r.ok()) {
    if (t->dtype != DType::f32 || t->dims.size() != 1 || t->dims[0] != s.head_dim / 2) {
      error(
          fmt::format("{}: tensor 'rope_freqs.weight' is {} [{}], expected f32 [{}] (a divisor per rotary "
                      "frequency)",
                      path.string(), to_string(t->dtype), fmt::join(t->dims, ", "), s.head_dim / 2));
      return nullptr;
    }
    try {
      for (float d : read_f32_tensor(f, *t)) {
        if (!std::isfinite(d) || d <= 0) {
          error(fmt::format("{}: tensor 'rope_freqs.weight' holds {} (divisors are positive)", path.string(), d));
          return nullptr;
        }
        a->rope_freq_divisors.push_back(d);
      }
    } catch (const InputError& e) {
      error(e.what());
      return nullptr;
    }
  }
  if (!r.ok()) return nullptr;
  if (auto b = r.id("tokenizer.ggml.bos_token_id", a->vocab)) a->bos = *b;
  // The tokens that end generation: end of sequence, of turn, of message.
  for (const char* key : {"tokenizer.ggml.eos_token_id", "tokenizer.ggml.eot_token_id", "tokenizer.ggml.eom_token_id"})
    if (auto e = r.id(key, a->vocab); e && std::find(a->eos.begin(), a->eos.end(), *e) == a->eos.end())
      a->eos.push_back(*e);
  if (!r.ok()) return nullptr;
  return a;
}

}  // namespace mstar
