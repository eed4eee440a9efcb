// Shard indexes (model.safetensors.index.json): weight_files, as a manifest
// or a checkpoint folder names them.
#include "common.h"
#include "core/errors.h"
#include "models/safetensors.h"

using namespace mstar;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const fs::path dir = [] {
    const fs::path d = fuzz::scratch() / "shards";
    fs::create_directories(d);
    // Two shards the seeds name, so an index can resolve.
    fuzz::write(d / "model-00001-of-00002.safetensors", "");
    fuzz::write(d / "model-00002-of-00002.safetensors", "");
    return d;
  }();
  fuzz::write(dir / "model.safetensors.index.json", data, size);
  try {
    (void)weight_files(dir / "model.safetensors.index.json");
  } catch (const InputError&) {
  }
  return 0;
}
