#pragma once
// What a world model declares about its ring KV cache
// (../shared/design/kv-semantics.md, "Ring KV", pins the arithmetic).
//
// Each layer keeps, per resident session, a fixed horizon of frame slots
// overwritten in place: local layers the last few frames at stride 1, global
// layers a longer horizon at a stride. Nothing grows with the rollout.
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <tuple>
#include <vector>

#include <fmt/format.h>

#include "core/dtype.h"
#include "core/fields.h"
#include "resources/resource_spec.h"

namespace mstar {

// One layer's ring: ring_frames frame slots (plus a scratch frame), of which
// ring_buckets are addressed, one bucket per pinned_dilation frames.
struct RingGeometry {
  int64_t ring_frames = 0;
  int64_t ring_buckets = 0;
  int64_t pinned_dilation = 1;

  // Local layers keep the last frames at stride 1; global ones a horizon at a stride.
  bool is_local() const { return pinned_dilation == 1; }
  bool operator==(const RingGeometry&) const = default;
};

struct RingKVConfig {
  int64_t num_layers = 0;
  int64_t num_kv_heads = 0;
  int64_t head_dim = 0;
  int64_t tokens_per_frame = 0;
  std::vector<RingGeometry> layers;  // one per layer
  int64_t num_sessions = 0;          // resident sessions (rollouts), not a batch
  DType dtype = DType::bf16;

  static constexpr auto fields() {
    using C = RingKVConfig;
    return std::make_tuple(
        field("num_layers", &C::num_layers, Need::derived, "attention layers that hold a ring", at_least(1)),
        field("num_kv_heads", &C::num_kv_heads, Need::derived, "KV heads per layer", at_least(1)),
        field("head_dim", &C::head_dim, Need::derived, "entries of one key or value vector", at_least(1)),
        field("tokens_per_frame", &C::tokens_per_frame, Need::derived, "tokens of one frame", at_least(1)),
        field("layers", &C::layers, Need::required, "one geometry per layer (or a pattern, in YAML)"),
        field("num_sessions", &C::num_sessions, Need::required, "rollouts resident at once", Range{1, INT32_MAX - 1}),
        field("dtype", &C::dtype, Need::defaulted, "storage dtype: f32, f16 or bf16"));
  }

  // Throws ConfigError naming `where`, the field (and layer) and the value.
  void validate(std::string_view where = "ring_kv") const;

  // Resident sessions plus the shared padding session no request owns.
  int64_t total_sessions() const { return num_sessions + 1; }
  // Token slots ONE session owns in `layer`'s ring, scratch frame included.
  int64_t capacity(int64_t layer) const;
  // Token slots of `layer`'s whole buffer, every session.
  int64_t total_slots(int64_t layer) const { return total_sessions() * capacity(layer); }
  // Bytes of `layer`'s K and V storage ([2, H_kv, total_slots, D]).
  std::size_t layer_bytes(int64_t layer) const;

  bool operator==(const RingKVConfig&) const = default;
};

// A config with the model layers that use it. The geometry is a fact of the
// checkpoint; a deployment tunes only how many rollouts are resident
// (num_sessions).
struct RingKVSpec final : ResourceSpec {
  std::string resource_key;
  // The model's attention layers this resource serves, ascending; its layer
  // i is layers[i]. Empty: layers 0 .. num_layers - 1 (a standalone config).
  std::vector<int64_t> layers;
  RingKVConfig config;

  RingKVSpec() = default;
  RingKVSpec(std::string key, std::vector<int64_t> served, RingKVConfig c)
      : resource_key(std::move(key)), layers(std::move(served)), config(std::move(c)) {}

  std::unique_ptr<ResourceSpec> copy() const override { return std::make_unique<RingKVSpec>(*this); }
  std::string_view type() const override { return "ring_kv"; }
  const std::string& key() const override { return resource_key; }
  std::vector<int64_t> served_layers() const override;
  void validate(std::string_view where) const override { config.validate(where); }
  std::unique_ptr<Resource> build(const ResourceOptions& options) const override;
  DType dtype() const override { return config.dtype; }
  void set_dtype(DType d) override { config.dtype = d; }
  std::string_view pool_field() const override { return "num_sessions"; }
  int64_t pool_size() const override { return config.num_sessions; }
  void set_pool_size(int64_t n) override { config.num_sessions = n; }
  nlohmann::json config_json() const override;
  // Every layer's rings; a ring holds no sources.
  uint64_t bytes(std::span<const int64_t> source_lens) const override;
  nlohmann::json plan_json(std::span<const int64_t> source_lens) const override;
  // Per layer [2, H_kv, capacity, D]: one session's rings.
  std::vector<Shape> state_shapes() const override;
  // next_frame (null before the first frame) and flags (per layer, one per frame slot).
  void check_state_fields(const nlohmann::json& fields, const std::string& where) const override;
  RequestState make_state(const nlohmann::json& fields, std::vector<HostBuffer> sections) const override;
};

}  // namespace mstar

template <>
struct fmt::formatter<mstar::RingGeometry> : fmt::formatter<std::string> {
  auto format(const mstar::RingGeometry& g, format_context& ctx) const {
    return fmt::formatter<std::string>::format(
        fmt::format("{{ring_frames: {}, ring_buckets: {}, pinned_dilation: {}}}", g.ring_frames, g.ring_buckets,
                    g.pinned_dilation),
        ctx);
  }
};

template <>
struct fmt::formatter<mstar::RingKVConfig> : fmt::formatter<std::string> {
  format_context::iterator format(const mstar::RingKVConfig& c, format_context& ctx) const;
};
