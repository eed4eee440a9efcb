// bounded_store and bounded_commit on the backend under test (on_backend.h)
// against the reference, byte for byte: every dtype, odd head dims, padding
// rows, write ranges in both orders, a source prefill.
#include <doctest/doctest.h>

#include <vector>

#include "kernels/bounded_kv.h"
#include "on_backend.h"

using namespace mstar;
using namespace mstar::kernels;

TEST_CASE("bounded store and commit: byte for byte as the reference, every dtype, odd head dims, padding rows") {
  for (int32_t D : {17, 54, 97, 64, 128})
    for (DType dt : {DType::f32, DType::f16, DType::bf16}) {
      CAPTURE(D);
      CAPTURE(to_string(dt));
      test::Rng rng(static_cast<uint64_t>(D) * 3 + static_cast<uint64_t>(dt));
      const int32_t H = 3, retained = 40, scratch = 16, tokens = retained + scratch, rows = 4;
      std::vector<unsigned char> pool = test::random_values(rng, dt, static_cast<int64_t>(rows) * H * tokens * 2 * D);
      std::vector<BoundedRowTable> table(rows);
      std::vector<int32_t> kv_indptr{0};
      for (int32_t r = 0; r < rows; ++r) {
        const int32_t span = 6 + r;
        BoundedRowTable& t = table[static_cast<size_t>(r)];
        t.slot = r == 2 ? kPaddingRow : r;
        t.writes[0] = {0, 1, 2, 3};               // step entries 0..2 to offsets 2..4
        t.writes[1] = {span - 1, -1, 20 + r, 4};  // the last four, last first (reverse order)
        if (r == 3) t.writes[2] = {3, 1, 30, 2};
        kv_indptr.push_back(kv_indptr.back() + span);
      }
      const int64_t kv_ts = H * D + 2;
      const std::vector<float> k = rng.normals(static_cast<size_t>(kv_indptr.back() * kv_ts));
      const std::vector<float> v = rng.normals(static_cast<size_t>(kv_indptr.back() * kv_ts));
      const int64_t es = static_cast<int64_t>(row_bytes(dt, 1));
      auto address_of = [&](unsigned char* base) {
        std::vector<BoundedRowAddress> a(rows);
        for (int32_t r = 0; r < rows; ++r) {
          a[static_cast<size_t>(r)].slot = base + static_cast<int64_t>(r) * H * tokens * 2 * D * es;
          a[static_cast<size_t>(r)].slot_head_stride = static_cast<int64_t>(tokens) * 2 * D;
        }
        return a;
      };
      BoundedStoreParams sp;
      sp.rows = rows;
      sp.num_kv_heads = H;
      sp.head_dim = D;
      sp.kv_dtype = dt;
      sp.scratch_start = retained;
      sp.kv_token_stride = kv_ts;
      sp.kv_head_stride = D;
      BoundedCommitParams cp;
      cp.rows = rows;
      cp.num_kv_heads = H;
      cp.head_dim = D;
      cp.kv_dtype = dt;
      cp.scratch_start = retained;

      // The reference, on host copies.
      std::vector<unsigned char> host = pool;
      const auto ha = address_of(host.data());
      BoundedStoreParams hs = sp;
      hs.table = table.data();
      hs.address = ha.data();
      hs.kv_indptr = kv_indptr.data();
      hs.k = k.data();
      hs.v = v.data();
      bounded_store(Backend::reference, hs);
      const std::vector<unsigned char> host_stored = host;
      BoundedCommitParams hc = cp;
      hc.table = table.data();
      hc.address = ha.data();
      bounded_commit(Backend::reference, hc);

      // The backend under test.
      DeviceBuffer dpool = test::upload(pool), dtable = test::upload(table), dindptr = test::upload(kv_indptr),
                   dk = test::upload(k), dv = test::upload(v);
      DeviceBuffer daddr = test::upload(address_of(static_cast<unsigned char*>(dpool.data())));
      BoundedStoreParams ds = sp;
      ds.table = static_cast<const BoundedRowTable*>(dtable.data());
      ds.address = static_cast<const BoundedRowAddress*>(daddr.data());
      ds.kv_indptr = static_cast<const int32_t*>(dindptr.data());
      ds.k = static_cast<const float*>(dk.data());
      ds.v = static_cast<const float*>(dv.data());
      bounded_store(test::backend_under_test(), ds);
      CHECK(test::download<unsigned char>(dpool, pool.size()) == host_stored);
      BoundedCommitParams dc = cp;
      dc.table = ds.table;
      dc.address = ds.address;
      bounded_commit(test::backend_under_test(), dc);
      CHECK(test::download<unsigned char>(dpool, pool.size()) == host);
      CHECK(host != host_stored);  // the commit moved something
    }
}

TEST_CASE("bounded store: a source prefill (scratch_start 0, one write range) as the reference writes it") {
  for (DType dt : {DType::f32, DType::f16, DType::bf16}) {
    test::Rng rng(9);
    const int32_t H = 2, D = 64, len = 48;
    const std::vector<float> k = rng.normals(static_cast<size_t>(len * H * D)),
                             v = rng.normals(static_cast<size_t>(len * H * D));
    std::vector<BoundedRowTable> table(1);
    table[0].slot = 0;
    table[0].writes[0] = {0, 1, 0, len};
    const std::vector<int32_t> indptr{0, len};
    std::vector<unsigned char> host(row_bytes(dt, H * len * 2 * D));
    std::vector<BoundedRowAddress> ha{{host.data(), nullptr, static_cast<int64_t>(len) * 2 * D, 0}};
    BoundedStoreParams p;
    p.rows = 1;
    p.num_kv_heads = H;
    p.head_dim = D;
    p.kv_dtype = dt;
    p.kv_token_stride = H * D;
    p.kv_head_stride = D;
    BoundedStoreParams hp = p;
    hp.table = table.data();
    hp.address = ha.data();
    hp.kv_indptr = indptr.data();
    hp.k = k.data();
    hp.v = v.data();
    bounded_store(Backend::reference, hp);
    DeviceBuffer src(test::memory(), host.size()), dt_table = test::upload(table), dindptr = test::upload(indptr),
                                                   dk = test::upload(k), dv = test::upload(v);
    DeviceBuffer daddr =
        test::upload(std::vector<BoundedRowAddress>{{src.data(), nullptr, static_cast<int64_t>(len) * 2 * D, 0}});
    p.table = static_cast<const BoundedRowTable*>(dt_table.data());
    p.address = static_cast<const BoundedRowAddress*>(daddr.data());
    p.kv_indptr = static_cast<const int32_t*>(dindptr.data());
    p.k = static_cast<const float*>(dk.data());
    p.v = static_cast<const float*>(dv.data());
    bounded_store(test::backend_under_test(), p);
    CHECK(test::download<unsigned char>(src, host.size()) == host);
  }
}
