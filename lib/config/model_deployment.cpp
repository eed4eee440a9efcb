#include "config/model_deployment.h"

#include <fmt/format.h>

#include <algorithm>
#include <fstream>
#include <optional>
#include <thread>

#include "config/checkpoint.h"
#include "config/diagnostics.h"
#include "config/manifest.h"
#include "core/dtype.h"
#include "core/errors.h"
#include "core/machine_memory.h"
#include "kernels/backend.h"
#include "kernels/cpu/isa.h"
#include "models/families/hf_decoder.h"
#include "models/family.h"
#include "models/stored_tensors.h"

namespace mstar {

namespace {

// The defaults (docs/running.md, "One command per model").
constexpr int64_t kMaxSpan = 4096;    // positions a request's cache spans at most
constexpr int64_t kSink = 4;          // attention sinks
constexpr int64_t kQueryWindow = 64;  // tokens one step takes per request
constexpr int64_t kMaxSlots = 64;
constexpr int64_t kKvBytes = 2;  // bf16

std::string yaml_string(const std::filesystem::path& p) { return fmt::format("\"{}\"", p.string()); }

// A request: one voice of 16 random tokens, 12 prompt tokens, 64 sampled.
// mstar-serve keeps the voice (clients may name "default") and ignores the rest.
std::string speech_workload() {
  return "workload:\n  voices:\n    default: {seed: 1, length: 16}\n  requests:\n    count: 1\n    voices: [default]\n"
         "    prompt_tokens: 12\n    max_tokens: 64\n    sampling: {temperature: 0.8, top_k: 50}\n    seed: 1\n";
}

// The backend and threads every deployment here runs on; `blocks`: the
// checkpoint stores a matrix in a block type (a quantised GGUF), whose
// products the cpu backend multiplies as integers against activations
// quantised to q8_0 (as llama.cpp does for Q8_0 and Q4_0; it takes Q8_K
// for the K types) where it has vector bodies for them: one row several
// times faster (docs/PERFORMANCE.md, "Block types"). The plain-loop bodies
// of a processor without AVX2 were not measured against widening.
std::string machine_part(std::vector<std::string>& chosen, std::optional<DType> blocks = std::nullopt) {
  std::string why;
  const bool cuda = backend_available(Backend::cuda, &why);
  const unsigned threads = std::max(1u, std::thread::hardware_concurrency());
  chosen.push_back(cuda ? fmt::format("backend     cuda (a GPU is here)")
                        : fmt::format("backend     cpu, {} threads, one a core (cuda: {})", threads,
                                      why.empty() ? "not built" : why));
  std::string out = fmt::format("backend: {}\nthreads: {}\nkv_dtype: bf16\n", cuda ? "cuda" : "cpu", threads);
  if (blocks && !cuda && kernels::best_cpu_isa() != kernels::CpuIsa::generic) {
    chosen.push_back(fmt::format("activations q8_0 before the products over block types ({} and any others the "
                                 "file holds), multiplied as integers (--set activations=f32: no activation "
                                 "error, one row slower)",
                                 to_string(*blocks)));
    out += "activations: q8_0\n";
  }
  return out;
}

std::filesystem::path checkpoint_deployment(const std::filesystem::path& model, const std::filesystem::path& dir,
                                            std::vector<std::string>& chosen) {
  const Checkpoint c = read_checkpoint(model, "--model");
  const std::string& kind = c.family->name;
  const HfArchitecture& h = *c.arch;
  const int64_t span = std::min(h.context_length, kMaxSpan);
  const int64_t source = span / 4, window = span - source - kSink - kQueryWindow;
  if (window < 1)
    throw InputError(
        fmt::format("--model {}: a context of {} leaves no window after a voice of {}, {} sinks and a "
                    "query window of {}; write a manifest (docs/models.md)",
                    model.string(), h.context_length, source, kSink, kQueryWindow));
  chosen.push_back(fmt::format("model       {}: {} checkpoint, context {}", model.string(), kind, h.context_length));
  chosen.push_back(
      fmt::format("kv          bounded_kv on every layer: {} sinks + a window of {} + a query window of "
                  "{}, voices up to {} tokens, positions inside the cache ({} in all: the context, at "
                  "most {})",
                  kSink, window, kQueryWindow, source, span, kMaxSpan));
  // Slots: half the memory the weights leave, a slot holding K and V of
  // every layer for sink + window + query window entries in bf16.
  uint64_t weights = 0;
  std::optional<DType> blocks;  // a block type a matrix is stored in
  for (const auto& [name, t] : index_weights(c.family->weight_files(model))) {
    weights += t.bytes;
    if (t.dtype && !is_element_type(*t.dtype) && t.shape.size() == 2) blocks = t.dtype;
  }
  const TrunkShape& s = h.shape;
  const auto slot =
      static_cast<uint64_t>(s.layers * 2 * s.kv_heads * (kSink + window + kQueryWindow) * s.head_dim * kKvBytes);
  const uint64_t memory = host_memory_bytes(), left = memory > weights ? memory - weights : 0;
  const auto slots = static_cast<int64_t>(std::clamp<uint64_t>(left / 2 / slot, 1, kMaxSlots));
  chosen.push_back(
      fmt::format("slots       {} ({} bytes each: half of the {} MiB this machine gives after the "
                  "weights' {} MiB, at most {})",
                  slots, slot, memory >> 20, weights >> 20, kMaxSlots));
  std::ofstream(dir / "model.yaml") << fmt::format(
      "name: {}\nkind: {}\ncheckpoint: {}\npositions: cache\nresources:\n  - resource_key: kv\n    type: bounded_kv\n"
      "    nodes: attn.*\n    config:\n      rows_per_request: 1\n      max_source_len: {}\n"
      "      retention: {{sink: {}, window: {}}}\n      max_slots: {}\n      query_window: {}\n",
      (std::filesystem::is_directory(model) ? model.filename() : model.stem()).string(), kind,
      yaml_string(std::filesystem::absolute(model)), source, kSink, window, slots, kQueryWindow);
  const std::filesystem::path config = dir / "deployment.yaml";
  std::ofstream(config) << "model: model.yaml\n" << machine_part(chosen, blocks) << speech_workload();
  return config;
}

std::filesystem::path manifest_deployment(const std::filesystem::path& model, const std::filesystem::path& dir,
                                          std::vector<std::string>& chosen) {
  Diagnostics diags;
  const std::optional<ModelManifest> m = load_manifest(model, model.string(), diags);
  if (!m) throw ConfigError(diags.str());
  chosen.push_back(fmt::format("model       {}: a manifest of kind {}, its resources as it states them", model.string(),
                               m->family->name));
  const std::filesystem::path config = dir / "deployment.yaml";
  std::ofstream(config) << fmt::format("model: {}\n", yaml_string(std::filesystem::absolute(model)))
                        << machine_part(chosen)
                        << (m->family->task == "frames" ? "workload:\n  requests: {count: 1, frames: 8, seed: 1}\n"
                                                        : speech_workload());
  return config;
}

}  // namespace

std::filesystem::path write_model_deployment(const std::filesystem::path& model, const std::filesystem::path& dir,
                                             std::vector<std::string>& chosen) {
  const std::string ext = model.extension().string();
  std::error_code ec;
  if (std::filesystem::is_regular_file(model, ec) && (ext == ".yaml" || ext == ".yml"))
    return manifest_deployment(model, dir, chosen);
  return checkpoint_deployment(model, dir, chosen);
}

}  // namespace mstar
