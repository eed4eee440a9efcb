#pragma once
// What a model declares about a bounded KV cache (../shared/design/kv-semantics.md
// pins the arithmetic).
//
// A request's cache is a logical stream: an optional read-only source prefix
// (a voice prompt's keys and values, shared by every request that names it)
// followed by the entries the request writes. Retention keeps the stream's
// first `sink` entries and its last `window` (StreamingLLM's attention sinks
// plus a sliding window), so a request's footprint is fixed and known when it
// starts: a slot holds the written part of the sink and a ring for the
// window; source entries are read where they live.
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <tuple>
#include <vector>

#include <fmt/format.h>

#include "core/dtype.h"
#include "core/fields.h"
#include "resources/resource.h"
#include "resources/resource_spec.h"

namespace mstar {

// Keep the stream's first `sink` and last `window` entries. With
// window_includes_step the window counts the step's own entries, so a step
// that writes `span` attends only the last window - span retained ones.
struct SinkWindow {
  int64_t sink = 0;
  int64_t window = 0;
  bool window_includes_step = false;
  bool operator==(const SinkWindow&) const = default;
};

// per_source * source_len + plus: a count that may follow the source length
// ("the whole source plus 4" is {1, 4}; a constant 16 is {0, 16}).
struct SourceAffine {
  int64_t per_source = 0;
  int64_t plus = 0;
  int64_t at(int64_t source_len) const { return per_source * source_len + plus; }
  bool operator==(const SourceAffine&) const = default;
};

// Retention as a rule of the source length. One constant SinkWindow is the
// rule with per_source = 0 in both counts. The rule is affine on purpose: it
// is declarative (it parses, prints and compares), and every quantity the
// slot geometry needs is then extreme at an end of the allowed source range,
// so capacities cost two evaluations.
struct RetentionRule {
  SourceAffine sink;
  SourceAffine window;
  bool window_includes_step = false;

  RetentionRule() = default;
  RetentionRule(SinkWindow c)  // NOLINT: a constant policy is a rule
      : sink{0, c.sink}, window{0, c.window}, window_includes_step(c.window_includes_step) {}
  RetentionRule(SourceAffine s, SourceAffine w, bool includes_step)
      : sink(s), window(w), window_includes_step(includes_step) {}

  SinkWindow at(int64_t source_len) const { return {sink.at(source_len), window.at(source_len), window_includes_step}; }
  bool is_constant() const { return sink.per_source == 0 && window.per_source == 0; }
  bool operator==(const RetentionRule&) const = default;
};

struct BoundedKVConfig {
  int64_t num_layers = 0;
  int64_t num_heads = 0;  // KV heads; queries may have a multiple (grouped-query attention)
  int64_t head_dim = 0;
  int64_t rows_per_request = 0;  // 2 for batched classifier-free guidance
  int64_t max_source_len = 0;
  RetentionRule retention;
  int64_t max_slots = 32;
  int64_t min_source_len = 0;
  DType dtype = DType::f32;
  // The step's entries join the stream last-first. Only for attention that
  // ignores key order: it decides which of a long step's entries are evicted.
  bool reverse_step_order = false;
  // In mstar: the most entries one step may write for one request (its span).
  // Absent means unbounded. admit refuses a longer span for good, and it
  // sizes each slot's scratch region.
  std::optional<int64_t> query_window;

  static constexpr auto fields() {
    using C = BoundedKVConfig;
    return std::make_tuple(
        field("num_layers", &C::num_layers, Need::derived, "attention layers that hold this cache", at_least(1)),
        field("num_heads", &C::num_heads, Need::derived, "KV heads per layer", at_least(1)),
        field("head_dim", &C::head_dim, Need::derived, "entries of one key or value vector", at_least(1)),
        field("rows_per_request", &C::rows_per_request, Need::required,
              "batch rows one request owns (2 for classifier-free guidance)", at_least(1)),
        field("max_source_len", &C::max_source_len, Need::required, "longest shared source prefix",
              Range{0, INT32_MAX}),
        field("retention", &C::retention, Need::required,
              "sink and window, constants or affine in the source length"),
        field("max_slots", &C::max_slots, Need::defaulted, "requests resident at once", Range{1, INT32_MAX}),
        field("min_source_len", &C::min_source_len, Need::defaulted, "shortest allowed source", at_least(0)),
        field("dtype", &C::dtype, Need::defaulted, "storage dtype: f32, f16 or bf16"),
        field("reverse_step_order", &C::reverse_step_order, Need::defaulted,
              "a step's entries join the stream last-first"),
        field("query_window", &C::query_window, Need::defaulted, "most entries one step may write per request",
              at_least(1)));
  }

  // Throws ConfigError naming `where`, the field and the value.
  void validate(std::string_view where = "bounded_kv") const;

  // The policy for a request whose source has source_len entries.
  SinkWindow retention_for(int64_t source_len) const;
  // Written entries a slot's sink region holds (the sink past the source).
  int64_t sink_capacity() const;
  int64_t window_capacity() const;
  // Entries a slot retains: the sink's written part, then the window's ring.
  int64_t retained_tokens() const { return sink_capacity() + window_capacity(); }
  // The slot's scratch region, past the retained entries: where a step's
  // kept entries wait until commit puts them in place, so a step that is
  // never committed leaves every retained entry intact. One step keeps at
  // most retained_tokens() of its entries, and at most query_window.
  int64_t scratch_tokens() const;
  int64_t slot_tokens() const { return retained_tokens() + scratch_tokens(); }
  // The most entries a request retains, over every allowed source length.
  int64_t max_retained() const;
  // Bytes of one slot in one layer ([rows, H, slot_tokens, 2D]).
  std::size_t slot_bytes_per_layer() const;
  // The slot pool's bytes over every layer: fixed at build.
  std::size_t pool_bytes() const;

  bool operator==(const BoundedKVConfig&) const = default;
};

// A config with the model layers that use it, scoped by a key that
// deployment YAML names to tune it (max_slots only: the rest of its geometry
// is a fact of the model).
struct BoundedKVSpec final : ResourceSpec {
  std::string resource_key;
  // The model's attention layers this resource serves, ascending; its layer
  // i is layers[i]. Empty: layers 0 .. num_layers - 1 (a standalone config).
  std::vector<int64_t> layers;
  BoundedKVConfig config;

  BoundedKVSpec() = default;
  BoundedKVSpec(std::string key, std::vector<int64_t> served, BoundedKVConfig c)
      : resource_key(std::move(key)), layers(std::move(served)), config(std::move(c)) {}

  std::unique_ptr<ResourceSpec> copy() const override { return std::make_unique<BoundedKVSpec>(*this); }
  std::string_view type() const override { return "bounded_kv"; }
  const std::string& key() const override { return resource_key; }
  std::vector<int64_t> served_layers() const override;
  void validate(std::string_view where) const override { config.validate(where); }
  std::unique_ptr<Resource> build(const ResourceOptions& options) const override;
  DType dtype() const override { return config.dtype; }
  void set_dtype(DType d) override { config.dtype = d; }
  std::string_view pool_field() const override { return "max_slots"; }
  int64_t pool_size() const override { return config.max_slots; }
  void set_pool_size(int64_t n) override { config.max_slots = n; }
  int64_t rows_per_request() const override { return config.rows_per_request; }
  SourceLimits source_limits() const override;
  nlohmann::json config_json() const override;
  // The slot pool, and each source as [layers, rows, H, len, 2D].
  uint64_t bytes(std::span<const int64_t> source_lens) const override;
  nlohmann::json plan_json(std::span<const int64_t> source_lens) const override;
  // Per layer [rows, H, retained_tokens, 2D]: a slot's retained entries.
  std::vector<Shape> state_shapes() const override;
  // written, source, source_len.
  void check_state_fields(const nlohmann::json& fields, const std::string& where) const override;
  RequestState make_state(const nlohmann::json& fields, std::vector<HostBuffer> sections) const override;
};

std::string format_rule(const SourceAffine& a);

}  // namespace mstar

template <>
struct fmt::formatter<mstar::RetentionRule> : fmt::formatter<std::string> {
  auto format(const mstar::RetentionRule& r, format_context& ctx) const {
    return fmt::formatter<std::string>::format(
        fmt::format("{{sink: {}, window: {}{}}}", mstar::format_rule(r.sink), mstar::format_rule(r.window),
                    r.window_includes_step ? ", window_includes_step: true" : ""),
        ctx);
  }
};

template <>
struct fmt::formatter<mstar::BoundedKVConfig> : fmt::formatter<std::string> {
  format_context::iterator format(const mstar::BoundedKVConfig& c, format_context& ctx) const;
};
