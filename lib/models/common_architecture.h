#pragma once
// The fields the in-house families (tts, world) state in their manifests'
// `architecture` block, declared once (core/fields.h).
#include <cstdint>
#include <string>
#include <tuple>

#include "core/field_source.h"
#include "core/fields.h"
#include "models/architecture.h"
#include "models/trunk.h"

namespace mstar {

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

  // The trunk these fields describe (RMSNorm epsilon 1e-6, no biases, SwiGLU).
  TrunkShape trunk() const {
    return {layers, width, heads, kv_heads, head_dim, mlp_width, 1e-6, false, NormKind::rms, false, FeedForwardSpec{}};
  }
};

// Reads the common fields and checks the rules every family shares; false
// (with every problem reported) when anything is wrong.
bool read_common_architecture(FieldSource& src, CommonArchitecture& out);

// The in-house families' tensor names for layer l ("layers.N.attn.q.weight", ...).
TrunkNames inhouse_names(int64_t layer);
// Every layer's tensors and the final norm, by those names.
void append_trunk_tensors(const CommonArchitecture& c, std::vector<TensorSpec>& out);
// The common fields as JSON, for mstar-check.
nlohmann::json common_json(const CommonArchitecture& c);

}  // namespace mstar
