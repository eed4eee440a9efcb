#include "resources/bounded_kv/manager.h"

#include <fmt/format.h>

#include "core/errors.h"

namespace mstar {

namespace {

const BoundedKVSpec& validated(const BoundedKVSpec& spec, const ResourceOptions& options) {
  spec.config.validate(fmt::format("resource '{}'", spec.resource_key));
  check_options("bounded_kv", options);
  return spec;
}

}  // namespace

BoundedKVManager::BoundedKVManager(const BoundedKVSpec& spec, const ResourceOptions& options)
    : spec_(validated(spec, options)), options_(options), book_(spec.config), storage_(spec.config, options) {}

void BoundedKVManager::register_source(int id, int64_t len) {
  book_.register_source(id, len);  // checks the id and the length
  storage_.add_source(id, len);
}

void BoundedKVManager::prefill_source(int id, int64_t layer, int64_t row, const BoundedAttendArgs& args) {
  storage_.write_source(id, layer, row, args.k, args.v);
  storage_.self_attend(args);
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

void BoundedKVManager::commit(const Step& step, const StepContext& ctx) {
  if (!staged_) throw InputError("bounded_kv: commit of a step that was never planned");
  storage_.commit();
  book_.commit(step, ctx);
}

}  // namespace mstar
