#include "resources/bounded_kv/manager.h"

#include <fmt/format.h>

#include "core/errors.h"

namespace mstar {

namespace {

const BoundedKVSpec& validated(const BoundedKVSpec& spec, const ResourceOptions& options) {
  spec.config.validate(fmt::format("resource '{}'", spec.resource_key));
  check_options("bounded_kv", options);
  check_fits_memory(fmt::format("resource '{}' (max_slots {})", spec.resource_key, spec.config.max_slots), spec.config.pool_bytes(),
                    options.backend);
  return spec;
}

}  // namespace

BoundedKVManager::BoundedKVManager(const BoundedKVSpec& spec, const ResourceOptions& options)
    : spec_(validated(spec, options)), options_(options), book_(spec.config), storage_(spec.config, options) {}

void BoundedKVManager::register_source(int id, int64_t len) {
  book_.register_source(id, len);  // checks the id and the length
  storage_.add_source(id, len);
}

void BoundedKVManager::prefill_source(int id, int64_t layer, int64_t row, const LayerPass& args) {
  storage_.write_source(id, layer, row, args.k, args.v);
  storage_.self_attend(args);
}

int64_t BoundedKVManager::seen_before(std::size_t row) const {
  MSTAR_ASSERT(staged_ && row < plan_.rows.size(), "seen_before: a row of the staged step");
  return plan_.rows[row].table.slot == kernels::kPaddingRow ? 0 : plan_.retained(row);
}

void BoundedKVManager::remove_source(int id) {
  book_.remove_source(id);
  storage_.drop_source(id);
}

void BoundedKVManager::plan(const Step& step, const StepContext& ctx) {
  plan_ = book_.plan(step, ctx);
  storage_.stage(plan_);
  staged_ = true;
}

BoundedRequestState BoundedKVManager::get_state(const std::string& rid) const {
  const BoundedRequest* r = book_.find(rid);
  if (!r) throw InputError(fmt::format("bounded_kv: get_state of unknown request '{}'", rid));
  BoundedRequestState st;
  st.written = r->written;
  st.source = r->source;
  st.source_len = r->source_len;
  if (!r->slot) {
    MSTAR_ASSERT(r->written == 0, "a request with committed entries holds its slot");
    return st;
  }
  for (int64_t l = 0; l < spec_.config.num_layers; ++l) st.kv.push_back(storage_.copy_slot(l, *r->slot));
  return st;
}

bool BoundedKVManager::holds_claim(const std::string& rid) const {
  const BoundedRequest* r = book_.find(rid);
  return r && r->slot;
}

std::unique_ptr<ResourceState> BoundedKVManager::save(const std::string& rid) const {
  return std::make_unique<BoundedRequestState>(get_state(rid));
}

void BoundedKVManager::restore_position(const std::string& rid, const BoundedRequestState& state) {
  book_.restore(rid, state.written, state.source, state.source_len);
}

void BoundedKVManager::load_state(const std::string& rid, const BoundedRequestState& state) {
  const BoundedRequest* r = book_.find(rid);
  if (!r || !r->slot) throw InputError(fmt::format("bounded_kv: load_state of request '{}', which holds no slot", rid));
  const BoundedKVConfig& c = spec_.config;
  if (state.written > 0 || !state.kv.empty()) {
    if (static_cast<int64_t>(state.kv.size()) != c.num_layers)
      throw InputError(fmt::format("bounded_kv load_state: the state has {} layers but this resource has {}",
                                   state.kv.size(), c.num_layers));
    // Every layer is checked before any is written, so a refused state changes nothing.
    const Shape want{c.rows_per_request, c.num_heads, c.retained_tokens(), 2 * c.head_dim};
    for (int64_t l = 0; l < c.num_layers; ++l) {
      const HostBuffer& kv = state.kv[static_cast<size_t>(l)];
      if (!(kv.shape() == want) || kv.dtype() != c.dtype)
        throw InputError(fmt::format("bounded_kv load_state: layer {}: the state is {} {}, but a slot of this "
                                     "resource retains {} {}",
                                     l, kv.dtype(), kv.shape(), c.dtype, want));
    }
  }
  book_.restore(rid, state.written, state.source, state.source_len);
  for (size_t l = 0; l < state.kv.size(); ++l) storage_.load_slot(static_cast<int64_t>(l), *r->slot, state.kv[l]);
}

void BoundedKVManager::commit(const Step& step, const StepContext& ctx) {
  if (!staged_) throw InputError("bounded_kv: commit of a step that was never planned");
  storage_.commit();
  book_.commit(step, ctx);
}

}  // namespace mstar
