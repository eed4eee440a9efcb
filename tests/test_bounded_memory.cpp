#include <doctest/doctest.h>

#include "resources/bounded_kv/manager.h"
#include "support.h"

using namespace mstar;

TEST_CASE("memory_bytes equals the analytic footprint and stays flat however long streams run") {
  BoundedKVConfig c;
  c.num_layers = 3;
  c.num_heads = 2;
  c.head_dim = 8;
  c.rows_per_request = 2;
  c.max_source_len = 10;
  c.retention = SinkWindow{4, 16, false};
  c.max_slots = 5;
  c.dtype = DType::bf16;
  BoundedKVManager kv(BoundedKVSpec{"kv", {}, c}, ResourceOptions{Backend::cpu, 1});
  // [layers] x [max_slots, rows, H, slot_tokens, 2D] x bytes, where a slot
  // holds the sink, the window and a scratch as large as both (no
  // query_window bounds a step's span).
  const std::size_t pool = 3u * 5 * 2 * 2 * (4 + 16 + 20) * 2 * 8 * 2;
  CHECK(kv.memory_bytes() == pool);
  CHECK(c.pool_bytes() == pool);

  test::Rng rng(5);
  std::vector<float> sk = rng.normals(3 * 2 * 2 * 7 * 8), sv = rng.normals(3 * 2 * 2 * 7 * 8);
  kv.register_source(1, 7);
  for (int64_t l = 0; l < 3; ++l)
    for (int64_t r = 0; r < 2; ++r)
      kv.write_source(1, l, r, f32_view(sk.data() + (l * 2 + r) * 7 * 2 * 8, Shape{7, 2, 8}),
                      f32_view(sv.data() + (l * 2 + r) * 7 * 2 * 8, Shape{7, 2, 8}));
  const std::size_t with_source = pool + 3u * 2 * 2 * 7 * 2 * 8 * 2;
  CHECK(kv.memory_bytes() == with_source);

  kv.ingest_request("a");
  int64_t written = 0;
  for (int step = 0; step < 2000; ++step) {  // 2000 steps of 3: 375 windows
    Step s;
    s.segments = {{"a", "decode", 3}};
    s.streams = {{"a", {7, written, 1}}};
    StepContext ctx;
    ctx.add_rows("a", 2);
    REQUIRE(kv.admit(s, ctx).ok());
    kv.plan(s, ctx);
    std::vector<float> q = rng.normals(2 * 2 * 8), k = rng.normals(6 * 2 * 8), v = rng.normals(6 * 2 * 8), o(2 * 2 * 8);
    const std::vector<int32_t> qi{0, 1, 2};
    LayerPass a;
    a.q = f32_view(q.data(), Shape{2, 2, 8});
    a.q_indptr = qi;
    a.k = f32_view(k.data(), Shape{6, 2, 8});
    a.v = f32_view(v.data(), Shape{6, 2, 8});
    a.out = f32_view(o.data(), Shape{2, 2, 8});
    for (int64_t l = 0; l < 3; ++l) kv.attend(l, a);
    kv.commit(s, ctx);
    written += 3;
    if (step % 500 == 0) CHECK(kv.memory_bytes() == with_source);
  }
  CHECK(kv.memory_bytes() == with_source);
  kv.remove_request("a");
  kv.remove_source(1);
  CHECK(kv.memory_bytes() == pool);
}
