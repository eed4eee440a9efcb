#include "resources/ring_kv/manager.h"

#include <fmt/format.h>

#include "core/errors.h"

namespace mstar {

namespace {

std::size_t ring_bytes(const RingKVConfig& c) {
  std::size_t b = 0;
  for (int64_t l = 0; l < c.num_layers; ++l) b += c.layer_bytes(l);
  return b;
}

const RingKVSpec& validated(const RingKVSpec& spec, const ResourceOptions& options) {
  spec.config.validate(fmt::format("resource '{}'", spec.resource_key));
  check_options("ring_kv", options);
  check_fits_memory(fmt::format("resource '{}' (num_sessions {})", spec.resource_key, spec.config.num_sessions), ring_bytes(spec.config),
                    options.backend);
  return spec;
}

}  // namespace

RingKVManager::RingKVManager(const RingKVSpec& spec, const ResourceOptions& options)
    : spec_(validated(spec, options)), options_(options), book_(spec.config), storage_(spec.config, options) {}

std::optional<int32_t> RingKVManager::session_of(const std::string& rid) const {
  const RingRequest* r = book_.find(rid);
  return r ? r->session : std::nullopt;
}

int32_t RingKVManager::held_session(const std::string& rid, const char* op) const {
  auto s = session_of(rid);
  if (!s) throw InputError(fmt::format("ring_kv: {} of request '{}', which holds no session", op, rid));
  return *s;
}

void RingKVManager::plan(const Step& step, const StepContext& ctx) {
  plan_ = book_.plan(step, ctx);
  storage_.stage(plan_);
  staged_ = true;
  pass_committed_ = false;
}

void RingKVManager::upsert(int64_t layer, ConstTensorView k, ConstTensorView v, bool commit) {
  if (!staged_) throw InputError("ring_kv upsert: no step is planned");
  storage_.upsert(layer, k, v, commit);
  pass_committed_ = pass_committed_ || commit;
}

void RingKVManager::attend(int64_t layer, const LayerPass& pass) {
  upsert(layer, pass.k, pass.v, pass.commit);
  attend(layer, pass.q, pass.out, pass.scale);
}

int64_t RingKVManager::seen_before(std::size_t row) const {
  throw InputError(fmt::format("ring_kv '{}': row {}: keys carry their frame's positions; cache positions do not apply",
                               spec_.resource_key, row));
}

void RingKVManager::commit(const Step& step, const StepContext& ctx) {
  if (!pass_committed_) return;  // no frame was committed: the clocks stay
  book_.commit(step, ctx);
}

void RingKVManager::reset_request(const std::string& rid, OnReset /*what*/) {
  if (auto s = book_.release(rid)) storage_.zero_session(*s);
}

void RingKVManager::remove_request(const std::string& rid) {
  if (auto s = book_.remove(rid)) storage_.zero_session(*s);
}

RingSessionState RingKVManager::get_state(const std::string& rid) const {
  const int32_t s = held_session(rid, "get_state");
  RingSessionState st;
  for (int64_t l = 0; l < spec_.config.num_layers; ++l) {
    st.kv.push_back(storage_.copy_session(l, s));
    st.written.push_back(book_.written(l, s));
  }
  st.next_frame = book_.find(rid)->next_frame;
  return st;
}

std::unique_ptr<ResourceState> RingKVManager::save(const std::string& rid) const {
  if (!holds_claim(rid)) return std::make_unique<RingSessionState>();
  return std::make_unique<RingSessionState>(get_state(rid));
}

void RingKVManager::load(const std::string& rid, const ResourceState& state) {
  const RingSessionState& s = state_as<RingSessionState>(*this, state);
  if (!s.kv.empty()) load_state(rid, s);
}

void RingKVManager::restore_position(const std::string& rid, const RingSessionState& state) {
  book_.restore_clock(rid, state.next_frame);
}

void RingKVManager::load_state(const std::string& rid, const RingSessionState& state) {
  const int32_t s = held_session(rid, "load_state");
  const RingKVConfig& c = spec_.config;
  if (static_cast<int64_t>(state.kv.size()) != c.num_layers || state.written.size() != state.kv.size())
    throw InputError(fmt::format("ring_kv load_state: the state has {} layers but this ring has {}", state.kv.size(),
                                 c.num_layers));
  // Check every layer before writing any, so a refused state changes nothing.
  for (int64_t l = 0; l < c.num_layers; ++l) {
    const Shape want{2, c.num_kv_heads, c.capacity(l), c.head_dim};
    const HostBuffer& kv = state.kv[static_cast<size_t>(l)];
    const auto frames = c.layers[static_cast<size_t>(l)].ring_frames + 1;
    const std::vector<uint8_t>& flags = state.written[static_cast<size_t>(l)];
    if (!(kv.shape() == want) || kv.dtype() != c.dtype || static_cast<int64_t>(flags.size()) != frames)
      throw InputError(fmt::format("ring_kv load_state: layer {}: the state is {} {} with {} frame flags, but a "
                                   "session of this ring is {} {} with {}",
                                   l, kv.dtype(), kv.shape(), flags.size(), c.dtype, want, frames));
    // A frame slot is written or not, and the scratch frame always counts as written.
    for (size_t f = 0; f < flags.size(); ++f)
      if (flags[f] > 1 || (f + 1 == flags.size() && flags[f] != 1))
        throw InputError(fmt::format("ring_kv load_state: layer {}: frame flag {} is {}, not a flag a ring keeps", l, f,
                                     flags[f]));
  }
  if (state.next_frame && (*state.next_frame < 0 || *state.next_frame > RingKVBook::kMaxFrame + 1))
    throw InputError(fmt::format("ring_kv load_state: the clock's next frame {} is outside [0, {}]", *state.next_frame,
                                 RingKVBook::kMaxFrame + 1));
  for (int64_t l = 0; l < c.num_layers; ++l) storage_.load_session(l, s, state.kv[static_cast<size_t>(l)]);
  book_.restore(rid, state.next_frame, state.written);
}

}  // namespace mstar
