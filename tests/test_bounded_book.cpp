// Lifecycle rules on the bookkeeping alone: no buffer is allocated here.
#include <doctest/doctest.h>

#include <set>

#include "core/errors.h"
#include "resources/bounded_kv/book.h"
#include "support.h"

using namespace mstar;

namespace {

BoundedKVConfig cfg(int64_t slots, int64_t rows = 1) {
  BoundedKVConfig c;
  c.num_layers = 1;
  c.num_heads = 1;
  c.head_dim = 4;
  c.rows_per_request = rows;
  c.max_source_len = 16;
  c.retention = SinkWindow{2, 6};
  c.max_slots = slots;
  c.query_window = 32;
  return c;
}

struct StepBuilder {
  Step step;
  StepContext ctx;
  int64_t rows = 1;
  StepBuilder& add(const std::string& rid, int64_t span, int64_t written, int64_t source_len = 0, int source = 0) {
    step.segments.push_back({rid, "decode", span});
    step.streams[rid] = {source_len, written, source};
    ctx.add_rows(rid, static_cast<int>(rows));
    return *this;
  }
};

// The book's observable state, to show a refused step changed nothing.
std::string snapshot(const BoundedKVBook& b, const std::vector<std::string>& rids) {
  std::string s = fmt::format("free={}", b.pool().free_count());
  for (const auto& r : rids) {
    const BoundedRequest* q = b.find(r);
    s += q ? fmt::format(" {}:{}:{}", r, q->slot ? *q->slot : -1, q->written) : fmt::format(" {}:gone", r);
  }
  return s;
}

}  // namespace

TEST_CASE("a full pool is retried, then served after a release") {
  BoundedKVBook b(cfg(2));
  for (auto r : {"a", "b", "c"}) b.ingest(r);
  CHECK(b.admit(StepBuilder{}.add("a", 1, 0).step, StepBuilder{}.add("a", 1, 0).ctx).ok());
  auto two = StepBuilder{}.add("b", 1, 0).add("c", 1, 0);
  const auto before = snapshot(b, {"a", "b", "c"});
  AdmitOutcome out = b.admit(two.step, two.ctx);
  CHECK(out.kind == AdmitOutcome::Kind::retry);
  CHECK(out.request == "b");
  CHECK(out.reason == "request 'b' needs a slot: 1 of 2 are free and this step needs 2");
  CHECK(snapshot(b, {"a", "b", "c"}) == before);  // a retried step claims nothing, not even b's slot

  b.remove("a");
  CHECK(b.admit(two.step, two.ctx).ok());
  CHECK(b.pool().free_count() == 0);
}

TEST_CASE("each malformed step is refused for good, naming the request, and touches nothing") {
  BoundedKVBook b(cfg(4));
  b.register_source(1, 5);
  for (auto r : {"ok", "bad"}) b.ingest(r);
  {
    auto s = StepBuilder{}.add("ok", 3, 0);
    REQUIRE(b.admit(s.step, s.ctx).ok());
    b.commit(s.step, s.ctx);
  }
  const auto before = snapshot(b, {"ok", "bad"});

  auto expect_refused = [&](StepBuilder s, const std::string& reason) {
    CAPTURE(reason);
    AdmitOutcome out = b.admit(s.step, s.ctx);
    CHECK(out.kind == AdmitOutcome::Kind::refused);
    CHECK(out.request == "bad");
    CHECK(out.reason == reason);
    CHECK(snapshot(b, {"ok", "bad"}) == before);
  };
  expect_refused(StepBuilder{}.add("ok", 1, 3).add("bad", 1, 2),
                 "request 'bad' (segment 'decode'): declares written 2 but 0 entries were committed");
  expect_refused(StepBuilder{}.add("ok", 1, 3).add("bad", 1, 0, 99, 1),
                 "request 'bad' (segment 'decode'): source length 99 is outside the allowed [0, 16]");
  expect_refused(StepBuilder{}.add("ok", 1, 3).add("bad", 1, 0, 4, 1),
                 "request 'bad' (segment 'decode'): declares source_len 4 but source 1 has 5 entries");
  expect_refused(StepBuilder{}.add("ok", 1, 3).add("bad", 1, 0, 5, 2),
                 "request 'bad' (segment 'decode'): names source 2, which is not registered");
  expect_refused(StepBuilder{}.add("ok", 1, 3).add("bad", -1, 0),
                 "request 'bad' (segment 'decode'): negative span -1");
  expect_refused(StepBuilder{}.add("ok", 1, 3).add("bad", 33, 0),
                 "request 'bad' (segment 'decode'): span 33 exceeds query_window 32");
  expect_refused(StepBuilder{}.add("ok", 1, 3).add("bad", 1, 0).add("bad", 1, 0),
                 "request 'bad' (segment 'decode'): two segments in one step");
  {
    auto s = StepBuilder{}.add("ok", 1, 3).add("bad", 1, 0);
    s.step.streams.erase("bad");
    expect_refused(s, "request 'bad' (segment 'decode'): declares no stream position");
  }
  {
    auto s = StepBuilder{}.add("ok", 1, 3).add("bad", 1, 0);
    s.ctx.request_ids.pop_back();
    s.ctx.is_padding.pop_back();
    expect_refused(s, "request 'bad' (segment 'decode'): has 0 rows in the batch; this resource needs 1");
  }
  {
    auto s = StepBuilder{}.add("ok", 1, 3);
    s.ctx.add_rows("bad", 1);
    expect_refused(s, "request 'bad' has rows in the batch but no segment");
  }
  {
    BoundedKVBook u(cfg(4));
    auto s = StepBuilder{}.add("ghost", 1, 0);
    AdmitOutcome out = u.admit(s.step, s.ctx);
    CHECK(out.kind == AdmitOutcome::Kind::refused);
    CHECK(out.reason == "request 'ghost' (segment 'decode'): unknown request (never ingested)");
  }
  // And the good request still goes on.
  auto s = StepBuilder{}.add("ok", 1, 3);
  CHECK(b.admit(s.step, s.ctx).ok());
}

TEST_CASE("rows per request: two consecutive rows each, padding anywhere") {
  BoundedKVBook b(cfg(4, 2));
  b.ingest("a");
  b.ingest("b");
  StepBuilder s;
  s.rows = 2;
  s.add("a", 1, 0);
  s.ctx.add_padding(1);
  s.add("b", 2, 0);
  CHECK(b.admit(s.step, s.ctx).ok());
  const BoundedKVPlan p = b.plan(s.step, s.ctx);
  CHECK(p.row_in_request == std::vector<int32_t>{0, 1, 0, 0, 1});
  CHECK(p.kv_indptr == std::vector<int32_t>{0, 1, 2, 2, 4, 6});
  CHECK(p.rows[2].table.slot == -1);

  StepBuilder split;
  split.rows = 1;
  split.add("a", 1, 0);
  split.ctx.add_padding(1);
  split.ctx.add_rows("a", 1);
  AdmitOutcome out = b.admit(split.step, split.ctx);
  CHECK(out.kind == AdmitOutcome::Kind::refused);
  CHECK(out.reason == "request 'a': its rows are not consecutive (row 2 follows row 0)");
}

TEST_CASE("plan and commit twice are harmless, reset keeps the slot, remove frees it") {
  BoundedKVBook b(cfg(2));
  b.ingest("a");
  auto s = StepBuilder{}.add("a", 5, 0);
  REQUIRE(b.admit(s.step, s.ctx).ok());
  REQUIRE(b.admit(s.step, s.ctx).ok());  // admitting again claims nothing more
  CHECK(b.pool().free_count() == 1);
  const BoundedKVPlan p1 = b.plan(s.step, s.ctx);
  const BoundedKVPlan p2 = b.plan(s.step, s.ctx);
  CHECK(std::memcmp(&p1.rows[0].table, &p2.rows[0].table, sizeof(kernels::BoundedRowTable)) == 0);
  b.commit(s.step, s.ctx);
  b.commit(s.step, s.ctx);
  CHECK(b.find("a")->written == 5);

  const int32_t slot = *b.find("a")->slot;
  b.reset("a", OnReset::keep_claim);
  CHECK(b.find("a")->written == 0);
  CHECK(*b.find("a")->slot == slot);
  b.reset("a", OnReset::release);
  CHECK(!b.find("a")->slot);
  CHECK(b.pool().free_count() == 2);
  b.remove("a");
  CHECK(b.find("a") == nullptr);
  b.remove("a");  // harmless
  CHECK_THROWS_AS(b.reset("a", OnReset::keep_claim), InputError);
}

TEST_CASE("sources: registered once, shared, and not removable while read") {
  BoundedKVBook b(cfg(4));
  b.register_source(7, 9);
  CHECK_THROWS_WITH_AS(b.register_source(7, 9), "bounded_kv: source 7 is already registered", InputError);
  CHECK_THROWS_WITH_AS(b.register_source(8, 17),
                       "bounded_kv: source 8 has 17 entries; allowed lengths are [1, 16] and at least 1", InputError);
  b.ingest("a");
  b.ingest("b");
  auto s = StepBuilder{}.add("a", 1, 0, 9, 7).add("b", 1, 0, 9, 7);
  REQUIRE(b.admit(s.step, s.ctx).ok());
  CHECK(b.source_users(7) == 2);
  CHECK_THROWS_WITH_AS(b.remove_source(7), "bounded_kv: source 7 is still read by 2 request(s)", InputError);
  b.remove("a");
  b.remove("b");
  b.remove_source(7);
  CHECK(!b.source_len(7));
}

TEST_CASE("random admit, commit, reset and remove sequences leave the pool whole") {
  test::Rng rng(3);
  for (int trial = 0; trial < 20; ++trial) {
    BoundedKVBook b(cfg(rng.uniform(1, 5)));
    std::map<std::string, int64_t> written;
    for (int op = 0; op < 300; ++op) {
      const std::string rid = fmt::format("r{}", rng.uniform(0, 7));
      switch (rng.uniform(0, 4)) {
        case 0: b.ingest(rid); break;
        case 1: b.remove(rid); break;
        case 2:
          if (b.find(rid)) b.reset(rid, rng.coin() ? OnReset::release : OnReset::keep_claim);
          break;
        default: {
          const BoundedRequest* req = b.find(rid);
          auto s = StepBuilder{}.add(rid, rng.uniform(0, 4), req ? req->written : 0);
          AdmitOutcome out = b.admit(s.step, s.ctx);
          if (!req) {
            CHECK(out.kind == AdmitOutcome::Kind::refused);
          } else if (out.ok()) {
            b.commit(s.step, s.ctx);
          } else {
            CHECK(out.kind == AdmitOutcome::Kind::retry);
            CHECK(b.pool().free_count() == 0);
          }
        }
      }
      // Held slots are exactly the requests' slots, never shared.
      std::set<int32_t> held;
      for (int i = 0; i < 8; ++i)
        if (const BoundedRequest* q = b.find(fmt::format("r{}", i)); q && q->slot) CHECK(held.insert(*q->slot).second);
      CHECK(static_cast<int64_t>(held.size()) + b.pool().free_count() == b.pool().size());
    }
    for (int i = 0; i < 8; ++i) b.remove(fmt::format("r{}", i));
    CHECK(b.pool().free_count() == b.pool().size());
  }
}
