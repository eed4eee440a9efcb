// Model manifests (models/*.yaml) through load_manifest: the family's
// architecture, the weights files or checkpoint folder it names, the
// tokenizer, the resources.
#include "common.h"
#include "config/manifest.h"
#include "core/json_text.h"

using namespace mstar;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  // Beside the shipped checkpoint and the test tokenizers, so manifests that
  // name them (the corpus seeds) load them.
  static const fs::path dir = [] {
    const fs::path d = fuzz::scratch() / "models";
    fs::create_directories(d);
    fuzz::link(fuzz::source_dir() / "models" / "hf-demo-qwen2", d / "hf-demo-qwen2");
    fuzz::link(fuzz::source_dir() / "tests" / "data" / "tokenizer", d / "tokenizer");
    fuzz::link(fuzz::source_dir() / "tests" / "data" / "hf", d / "hf");
    return d;
  }();
  fuzz::write(dir / "fuzz.yaml", data, size);
  Diagnostics diags;
  if (auto m = load_manifest(dir / "fuzz.yaml", "fuzz.yaml", diags)) {
    (void)m->resource_specs();
    (void)dump_json(m->arch->to_json());
  }
  (void)diags.str();
  return 0;
}
