#pragma once
// A model manifest (models/*.yaml): what the model is, its architecture, its
// weights and the KV resources it declares. Written once per model; a
// deployment (configs/*.yaml) points at it.
#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <tuple>
#include <variant>
#include <vector>

#include "config/diagnostics.h"
#include "config/fields.h"
#include "core/dtype.h"
#include "resources/bounded_kv/config.h"
#include "resources/ring_kv/config.h"

namespace mstar {

enum class ModelKind : unsigned char {
  tts,    // voice-prompt speech: a causal decoder over codec tokens
  world,  // frame rollouts: latent frames with denoising passes
};
std::string_view to_string(ModelKind k);

struct CommonArchitecture {
  int64_t layers = 0, width = 0, heads = 0, kv_heads = 0, head_dim = 0, mlp_width = 0;
  int64_t rope_theta = 10000;
  // Which position a cached key carries once entries have been evicted:
  // "stream" (its position in the stream: plain RoPE, keys cached rotated)
  // or "cache" (its position inside the retained cache, as StreamingLLM does
  // to stay within the trained range: keys cached unrotated, rotated on read).
  std::string positions = "stream";

  static constexpr auto fields() {
    using C = CommonArchitecture;
    return std::make_tuple(
        field("layers", &C::layers, Need::required, "transformer layers", Range{1, 1024}),
        field("width", &C::width, Need::required, "model width", Range{1, 1 << 16}),
        field("heads", &C::heads, Need::required, "query heads", Range{1, 1024}),
        field("kv_heads", &C::kv_heads, Need::required, "key/value heads", Range{1, 1024}),
        field("head_dim", &C::head_dim, Need::required, "entries per head", Range{1, 1024}),
        field("mlp_width", &C::mlp_width, Need::required, "SwiGLU hidden width", Range{1, 1 << 18}),
        field("rope_theta", &C::rope_theta, Need::defaulted, "rotary base", Range{1, 1'000'000'000}),
        field("positions", &C::positions, Need::defaulted, "stream or cache: the position a cached key carries"));
  }
  bool operator==(const CommonArchitecture&) const = default;
};

struct TtsArchitecture {
  int64_t vocab_size = 0;  // codec tokens
  int64_t end_token = 0;   // the token that ends a stream

  static constexpr auto fields() {
    using C = TtsArchitecture;
    return std::make_tuple(field("vocab_size", &C::vocab_size, Need::required, "codec vocabulary", Range{2, 1 << 20}),
                           field("end_token", &C::end_token, Need::required, "token that ends a stream", at_least(0)));
  }
  bool operator==(const TtsArchitecture&) const = default;
};

struct WorldArchitecture {
  int64_t latent_channels = 0;
  int64_t control_dim = 0;  // per-frame control vector
  int64_t frame_height = 0, frame_width = 0;
  int64_t tokens_per_frame = 0;  // frame_height * frame_width
  int64_t denoise_steps = 0;     // passes per frame; the last one commits
  // Rotary pairs given to time, height and width (sum: head_dim / 2).
  int64_t rope_time = 0, rope_height = 0, rope_width = 0;

  static constexpr auto fields() {
    using C = WorldArchitecture;
    return std::make_tuple(
        field("latent_channels", &C::latent_channels, Need::required, "channels per latent token", Range{1, 1 << 16}),
        field("control_dim", &C::control_dim, Need::required, "entries of a frame's control vector", Range{0, 1 << 16}),
        field("frame_height", &C::frame_height, Need::required, "latent tokens down a frame", Range{1, 1 << 12}),
        field("frame_width", &C::frame_width, Need::required, "latent tokens across a frame", Range{1, 1 << 12}),
        field("tokens_per_frame", &C::tokens_per_frame, Need::required, "frame_height * frame_width",
              Range{1, 1 << 20}),
        field("denoise_steps", &C::denoise_steps, Need::required, "denoising passes per frame", Range{1, 1000}),
        field("rope_time", &C::rope_time, Need::required, "rotary pairs for time", at_least(0)),
        field("rope_height", &C::rope_height, Need::required, "rotary pairs for height", at_least(0)),
        field("rope_width", &C::rope_width, Need::required, "rotary pairs for width", at_least(0)));
  }
  bool operator==(const WorldArchitecture&) const = default;
};

struct Architecture {
  CommonArchitecture common;
  TtsArchitecture tts;      // meaningful for kind tts
  WorldArchitecture world;  // meaningful for kind world
};

struct WeightsSpec {
  std::optional<int64_t> dummy_seed;  // deterministic dummy initialisation
  std::string file;                   // or a safetensors file, relative to the manifest
  DType dtype = DType::f32;

  static constexpr auto fields() {
    using C = WeightsSpec;
    return std::make_tuple(
        field("dummy_seed", &C::dummy_seed, Need::defaulted, "seed of the dummy initialisation", at_least(0)),
        field("file", &C::file, Need::defaulted, "safetensors file, relative to the manifest"),
        field("dtype", &C::dtype, Need::defaulted, "weights dtype: f32, f16 or bf16"));
  }
};

struct ResourceDecl {
  std::string type;  // "bounded_kv" or "ring_kv"
  std::variant<BoundedKVSpec, RingKVSpec> spec;
  const std::string& key() const;
};

struct ModelManifest {
  std::string name;
  ModelKind kind = ModelKind::tts;
  Architecture arch;
  WeightsSpec weights;
  std::vector<ResourceDecl> resources;
  std::filesystem::path path;  // where it was read from
};

// Reads and checks a manifest; every problem goes to `diags` (with `label`
// naming the file) and the result is nullopt when there was any.
std::optional<ModelManifest> load_manifest(const std::filesystem::path& path, const std::string& label,
                                           Diagnostics& diags);

}  // namespace mstar
