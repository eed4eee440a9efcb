// mstar-weights MANIFEST OUT.safetensors [--dtype f32|f16|bf16]
// Writes a model's weights (its dummy initialisation, or whatever its
// manifest loads) to a safetensors file with the tensor names the model's
// family expects, so loading is tested on a real file.
#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include "cli.h"
#include "config/manifest.h"
#include "models/weights.h"

int main(int argc, char** argv) {
  CLI::App app{"Write a model's weights to a safetensors file"};
  std::string manifest, out, dtype = "f32";
  app.add_option("manifest", manifest, "model manifest (models/*.yaml)")->required();
  app.add_option("out", out, "safetensors file to write")->required();
  app.add_option("--dtype", dtype, "f32, f16 or bf16");
  if (auto rc = mstar::cli::parse(app, argc, argv)) return *rc;
  return mstar::cli::guarded("mstar-weights", [&] {
    const mstar::DType dt = mstar::parse_dtype(dtype, "--dtype");
    mstar::Diagnostics diags;
    auto m = mstar::load_manifest(manifest, manifest, diags);
    if (!m) {
      fmt::print(stderr, "{}", diags.str());
      return mstar::cli::kInvalid;
    }
    const auto specs = m->arch->tensors();
    const mstar::Weights w = m->load_weights(mstar::Backend::reference);  // written row-major whatever the layout
    mstar::write_weights(w, specs, out, dt);
    fmt::print("{}: {} tensors, {}\n", out, w.all().size(), dtype);
    return mstar::cli::kOk;
  });
}
