// Admission across resources: a step is admitted by every resource or by
// none, and a refusal by one leaves nothing claimed in the others. Two
// resources of different types and sizes: bounded (2 slots) and ring (1
// session), each request holding both.
#include <doctest/doctest.h>

#include "resources/resource_set.h"
#include "resources/bounded_kv/manager.h"
#include "resources/ring_kv/manager.h"

using namespace mstar;

namespace {

std::vector<SpecRef> two_kinds() {
  BoundedKVConfig b;
  b.num_layers = 1;
  b.num_heads = 1;
  b.head_dim = 4;
  b.rows_per_request = 1;
  b.max_source_len = 0;
  b.retention = SinkWindow{1, 4};
  b.max_slots = 2;
  RingKVConfig r;
  r.num_layers = 1;
  r.num_kv_heads = 1;
  r.head_dim = 4;
  r.tokens_per_frame = 2;
  r.layers = {RingGeometry{2, 2, 1}};
  r.num_sessions = 1;
  return {BoundedKVSpec{"text", {0}, b}, RingKVSpec{"frames", {1}, r}};
}

// Every request's part of the step, for both kinds: a stream position and a frame.
Step step_of(const std::vector<std::string>& rids, StepContext& ctx) {
  Step s;
  ctx = {};
  for (const auto& rid : rids) {
    s.segments.push_back({rid, "both", 2});
    s.streams[rid] = {0, 0, 0};
    s.frames[rid] = 0;
    ctx.add_rows(rid, 1);
  }
  return s;
}

}  // namespace

TEST_CASE("resource set: all or none across a bounded and a ring resource") {
  ResourceSet set(two_kinds(), ResourceOptions{Backend::cpu, 1});
  for (const char* r : {"a", "b"}) set.ingest_request(r);
  auto& bounded = dynamic_cast<BoundedKVManager&>(set.attention(0).first);
  auto& ring = dynamic_cast<RingKVManager&>(set.attention(1).first);

  // Both are attention memory; only the bounded one holds sources, and only
  // its rows have cache positions.
  AttentionMemory& frames = set.attention(1).first;
  CHECK(set.attention(0).first.holds_sources());
  CHECK(!frames.holds_sources());
  CHECK_THROWS_WITH_AS(frames.register_source(1, 4), "register_source 1: this resource holds no sources", InputError);
  CHECK_THROWS_AS(frames.seen_before(0), InputError);
  CHECK(set.attention(1).second == 0);  // the ring's own index for model layer 1

  // Two requests fit the bounded pool (2 slots) but not the ring (1 session):
  // the step waits, and the bounded resource has claimed nothing.
  StepContext ctx;
  AdmitOutcome out = set.admit(step_of({"a", "b"}, ctx), ctx);
  CHECK(out.kind == AdmitOutcome::Kind::retry);
  CHECK(out.reason == "request 'a' needs a session: 1 of 1 are free and this step needs 2");
  CHECK(bounded.occupancy().in_use == 0);
  CHECK(ring.occupancy().in_use == 0);

  // A step malformed for the second resource only (no frame declared) is
  // refused for good, and again nothing is claimed anywhere.
  Step s = step_of({"a"}, ctx);
  s.frames.clear();
  out = set.admit(s, ctx);
  CHECK(out.kind == AdmitOutcome::Kind::refused);
  CHECK(out.request == "a");
  CHECK(bounded.occupancy().in_use == 0);

  // One request fits both: it claims a slot and a session together.
  CHECK(set.admit(step_of({"a"}, ctx), ctx).ok());
  CHECK(bounded.occupancy().in_use == 1);
  CHECK(ring.occupancy().in_use == 1);
  set.remove_request("a");
  CHECK(bounded.occupancy().in_use == 0);
  CHECK(ring.occupancy().in_use == 0);
}

TEST_CASE("resource set: two resources may not serve one layer") {
  auto specs = two_kinds();
  RingKVSpec ring = *specs[1].as<RingKVSpec>();
  ring.layers = {0};
  specs[1] = ring;
  CHECK_THROWS_WITH_AS(ResourceSet(specs, ResourceOptions{Backend::cpu, 1}),
                       "resource 'frames': layer 0 is already served by resource 'text'", ConfigError);
}
