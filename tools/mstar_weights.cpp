// mstar-weights MANIFEST OUT.safetensors [--dtype f32|f16|bf16]
// Writes a model's weights (its dummy initialisation, or whatever its
// manifest loads) to a safetensors file with the tensor names the model
// expects, so loading is tested on a real file.
#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include "config/diagnostics.h"
#include "core/errors.h"
#include "models/manifest.h"
#include "models/weights.h"

int main(int argc, char** argv) {
  CLI::App app{"Write a model's weights to a safetensors file"};
  std::string manifest, out, dtype = "f32";
  app.add_option("manifest", manifest, "model manifest (models/*.yaml)")->required();
  app.add_option("out", out, "safetensors file to write")->required();
  app.add_option("--dtype", dtype, "f32, f16 or bf16");
  CLI11_PARSE(app, argc, argv);
  mstar::Diagnostics diags;
  auto m = mstar::load_manifest(manifest, manifest, diags);
  if (!m) {
    fmt::print(stderr, "{}", diags.str());
    return 1;
  }
  try {
    const mstar::DType dt = mstar::parse_dtype(dtype, "--dtype");
    const mstar::Weights w = mstar::Weights::from_manifest(*m);
    mstar::write_weights(w, m->kind, m->arch, out, dt);
    fmt::print("{}: {} tensors, {}\n", out, w.all().size(), dtype);
  } catch (const std::exception& e) {
    fmt::print(stderr, "mstar-weights: {}\n", e.what());
    return 1;
  }
  return 0;
}
