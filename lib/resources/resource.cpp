#include "resources/resource.h"

#include "resources/resource_spec.h"

namespace mstar {

const char* to_string(AdmitOutcome::Kind k) {
  switch (k) {
    case AdmitOutcome::Kind::ok: return "ok";
    case AdmitOutcome::Kind::retry: return "retry";
    case AdmitOutcome::Kind::refused: return "refused";
  }
  return "?";
}

void StepContext::add_rows(const std::string& rid, int n) {
  for (int i = 0; i < n; ++i) {
    request_ids.push_back(rid);
    is_padding.push_back(0);
  }
}

void StepContext::add_padding(int n) {
  for (int i = 0; i < n; ++i) {
    request_ids.emplace_back();
    is_padding.push_back(1);
  }
}

AdmitOutcome Resource::admit(const Step& step, const StepContext& ctx) {
  AdmitOutcome out = check(step, ctx);
  if (out.ok()) claim(step, ctx);
  return out;
}

namespace {

[[noreturn]] void keeps_no_state(const Resource& r) {
  throw InputError(fmt::format("resource '{}' ({}) keeps no state a snapshot can save", r.key(), r.type()));
}

}  // namespace

std::unique_ptr<ResourceState> Resource::save(const std::string&) const { keeps_no_state(*this); }
void Resource::restore_position(const std::string&, const ResourceState&) { keeps_no_state(*this); }
void Resource::load(const std::string&, const ResourceState&) { keeps_no_state(*this); }

}  // namespace mstar
