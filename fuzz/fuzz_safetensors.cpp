// safetensors files: the header (read_safetensors_header) and, when it
// parses, loading the tensors it declares (Weights::load: shapes, byte
// counts, alignment, finite values).
#include "common.h"
#include "core/errors.h"
#include "models/safetensors.h"
#include "models/weights.h"

using namespace mstar;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const fs::path file = fuzz::scratch() / "w.safetensors";
  fuzz::write(file, data, size);
  SafetensorsHeader h;
  try {
    h = read_safetensors_header(file);
  } catch (const InputError&) {
    return 0;
  }
  // The header's own tensors as the expected ones (a family's names would
  // stop every input at "missing"); shapes whose element count overflows
  // are what Weights::load's byte check must refuse.
  std::vector<TensorSpec> specs;
  for (const auto& [name, e] : h.tensors) {
    // A family's shapes are small by construction; so must these be.
    uint64_t n = 1;
    for (int64_t d : e.shape)
      if (d < 0 || __builtin_mul_overflow(n, static_cast<uint64_t>(d), &n) || n > (uint64_t{1} << 40)) return 0;
    specs.push_back({name, e.shape});
  }
  try {
    const Weights w = Weights::load({file}, specs);
    (void)w.bytes();
  } catch (const InputError&) {
  }
  return 0;
}
