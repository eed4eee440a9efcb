// The bounded KV resource behind the ResourceSpec interface: what a manifest
// reader, a deployment's overrides, the memory plan and snapshots ask of it.
#include <algorithm>

#include <fmt/format.h>

#include "core/checked.h"
#include "core/json_object.h"
#include "resources/bounded_kv/json.h"
#include "resources/bounded_kv/manager.h"
#include "resources/bounded_kv/memory.h"

namespace mstar {

using nlohmann::json;

std::vector<int64_t> BoundedKVSpec::served_layers() const { return layers_or_all(layers, config.num_layers); }

std::unique_ptr<Resource> BoundedKVSpec::build(const ResourceOptions& options) const {
  return std::make_unique<BoundedKVManager>(*this, options);
}

SourceLimits BoundedKVSpec::source_limits() const {
  return {config.min_source_len, config.max_source_len, config.query_window.value_or(INT64_MAX)};
}

json BoundedKVSpec::config_json() const { return to_json(config); }

uint64_t BoundedKVSpec::bytes(std::span<const int64_t> source_lens) const {
  const BoundedKVConfig& c = config;
  uint64_t total = c.pool_bytes();
  for (const int64_t len : source_lens) {
    const auto b = checked_product(
        {c.num_layers, c.rows_per_request, c.num_heads, len, 2, c.head_dim, static_cast<int64_t>(row_bytes(c.dtype, 1))});
    if (!b || __builtin_add_overflow(total, *b, &total)) return UINT64_MAX;
  }
  return total;
}

json BoundedKVSpec::plan_json(std::span<const int64_t> source_lens) const {
  const BoundedKVConfig& c = config;
  const BoundedKVMemory m = memory_report(c);
  const uint64_t total = bytes(source_lens);
  return json{{"resource_key", resource_key},
              {"type", "bounded_kv"},
              {"layers", c.num_layers},
              {"config", config_json()},
              {"slot_tokens", m.slot_tokens},
              {"sink_capacity", m.sink_tokens},
              {"window_capacity", m.window_tokens},
              {"scratch_tokens", m.scratch_tokens},
              {"max_retained_per_request", c.max_retained()},
              {"slots", c.max_slots},
              {"bytes_per_slot", m.bytes_per_slot},
              {"pool_bytes", m.total_bytes},
              {"source_bytes", total == UINT64_MAX ? UINT64_MAX : total - m.total_bytes},
              {"total_bytes", total}};
}

std::vector<Shape> BoundedKVSpec::state_shapes() const {
  const BoundedKVConfig& c = config;
  return std::vector<Shape>(static_cast<size_t>(c.num_layers),
                            Shape{c.rows_per_request, c.num_heads, c.retained_tokens(), 2 * c.head_dim});
}

void BoundedKVSpec::check_state_fields(const json& fields, const std::string& where) const {
  const JsonFields f(fields, where);
  f.only({"written", "source", "source_len"});
  f.integer("written", 0, INT64_MAX / 8);
  f.integer("source", INT32_MIN, INT32_MAX);
  f.integer("source_len", 0, INT32_MAX);
}

RequestState BoundedKVSpec::make_state(const json& fields, std::vector<HostBuffer> sections) const {
  auto s = std::make_unique<BoundedRequestState>();
  s->written = fields.at("written").get<int64_t>();
  s->source = fields.at("source").get<int>();
  s->source_len = fields.at("source_len").get<int64_t>();
  s->kv = std::move(sections);
  return s;
}

std::unique_ptr<ResourceState> BoundedRequestState::copy() const {
  auto c = std::make_unique<BoundedRequestState>();
  c->written = written;
  c->source = source;
  c->source_len = source_len;
  for (const HostBuffer& h : kv) c->kv.push_back(h.copy());
  return c;
}

json BoundedRequestState::fields() const {
  return json{{"written", written}, {"source", source}, {"source_len", source_len}};
}

}  // namespace mstar
