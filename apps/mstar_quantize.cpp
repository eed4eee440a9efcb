// mstar-quantize IN OUT --type TYPE
// Writes a llama or qwen2 checkpoint (a Hugging Face folder or a GGUF file)
// as a GGUF file, its matrices in TYPE (F32, F16, BF16, Q8_0, Q4_0, Q4_K, Q5_K, Q6_K or Q4_K_M), in the
// layout llama.cpp reads (docs/gguf.md, "Writing").
#include <fmt/format.h>

#include <CLI/CLI.hpp>

#include "cli.h"
#include "config/gguf_export.h"

int main(int argc, char** argv) {
  CLI::App app{"Write a llama or qwen2 checkpoint as a GGUF file, its matrices quantised"};
  std::string in, out, type;
  app.add_option("in", in, "a Hugging Face checkpoint folder or a GGUF file")->required();
  app.add_option("out", out, "the GGUF file to write")->required();
  app.add_option("--type", type, "the matrices' type: F32, F16, BF16, Q8_0, Q4_0, Q4_K, Q5_K, Q6_K or Q4_K_M")
      ->required();
  if (auto rc = mstar::cli::parse(app, argc, argv)) return *rc;
  return mstar::cli::guarded("mstar-quantize", [&] {
    const mstar::GgufExport r = mstar::export_gguf(in, out, mstar::gguf_export_types(type, "--type"));
    fmt::print("{}: {} tensors, {} matrices {}{}, {} bytes of tensors, {}\n", out, r.tensors, r.in_type, type,
               r.as_f16 ? fmt::format(" and {} f16 (rows not whole blocks of it)", r.as_f16) : "", r.bytes,
               r.tokenizer ? "with the tokenizer" : "without a tokenizer (none in the input)");
    return mstar::cli::kOk;
  });
}
