#pragma once
// Where a model's tensors lie in its weights files, whatever the format:
// safetensors (one file, or the shards an index lists) or one GGUF file,
// whose llama.cpp names are mapped to the Hugging Face names the families
// use (docs/gguf.md, "Tensors"). The loader (Weights::load) and the
// manifest's check read the same index, so what one accepts the other does.
#include <cstdint>
#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "core/dtype.h"

namespace mstar {

struct StoredTensor {
  std::filesystem::path file;
  std::string stored_dtype;        // as the file names it, for messages ("BF16", "q4_k")
  std::optional<DType> dtype;      // mstar's row for it; nullopt when mstar has none
  std::vector<int64_t> shape;      // row-major, outermost first: [out, in] for a matrix
  uint64_t offset = 0, bytes = 0;  // where its bytes are in the file
  // > 0: the rows are in llama.cpp's interleaved rotary order, in this many
  // heads, and the loader puts them back in Hugging Face's halves order
  // (reorder_rope_rows).
  int64_t interleaved_heads = 0;
};

// Every tensor of `files` under the name the families use. Throws
// InputError naming the file: a header that is not its format, a tensor in
// two files (shards), and the GGUF reader's problems (core/gguf.h).
std::map<std::string, StoredTensor> index_weights(const std::vector<std::filesystem::path>& files);

// The GGUF name of a tensor to the Hugging Face decoder's ("blk.3.attn_q.weight"
// -> "model.layers.3.self_attn.q_proj.weight"); a name with no counterpart is
// returned as it is.
std::string hf_name_of_gguf(const std::string& gguf_name);

// The two orders of a rotary projection's rows within a head: Hugging
// Face's (the rotated pairs are rows i and i + half) and llama.cpp's (rows
// 2i and 2i + 1).
enum class RopeRows : unsigned char { halves, interleaved };
// A [rows, row_bytes] matrix of `heads` heads, in place from the other
// order into `to`: row 2i + j (j in {0, 1}) of a head interleaved is row
// j * rows_per_head / 2 + i in halves. rows a multiple of 2 * heads.
void reorder_rope_rows(void* data, int64_t rows, std::size_t row_bytes, int64_t heads, RopeRows to);

}  // namespace mstar
