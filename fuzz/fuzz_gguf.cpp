// GGUF files: the header, metadata and tensor infos (read_gguf), and, when
// they parse, what the llama and qwen2 families read from them: the
// architecture from the metadata (the first byte chooses the family) and
// the tensors under their Hugging Face names (index_weights), loaded as the
// file declares them (Weights::load: types, sizes, the rotary row order,
// finite values).
#include "common.h"
#include "core/errors.h"
#include "core/gguf.h"
#include "models/family.h"
#include "models/stored_tensors.h"
#include "models/weights.h"

using namespace mstar;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  const fs::path file = fuzz::scratch() / "m.gguf";
  fuzz::write(file, data + 1, size - 1);
  try {
    (void)read_gguf(file);
  } catch (const InputError&) {
    return 0;
  }
  const ModelFamily* family = find_family(data[0] & 1 ? "llama" : "qwen2");
  ArchitectureInput in;
  in.checkpoint = file;
  in.error = [](const std::string& msg) { (void)msg.size(); };
  if (std::unique_ptr<Architecture> a = family->read_architecture(in)) (void)a->tensors();
  // The file's own tensors as the expected ones, as fuzz_safetensors does.
  std::vector<TensorSpec> specs;
  try {
    for (const auto& [name, t] : index_weights({file})) {
      uint64_t n = 1;
      for (int64_t d : t.shape)
        if (__builtin_mul_overflow(n, static_cast<uint64_t>(d), &n) || n > (uint64_t{1} << 24)) return 0;
      specs.push_back({name, t.shape, t.shape.size() == 2});
    }
    const Weights w = Weights::load({file}, specs);
    (void)w.bytes();
  } catch (const InputError&) {
  }
  return 0;
}
