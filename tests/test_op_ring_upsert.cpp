// ring_upsert on the backend under test (on_backend.h) against the
// reference, byte for byte, with and without the ring slot.
#include <doctest/doctest.h>

#include <vector>

#include "kernels/ring_kv.h"
#include "on_backend.h"

using namespace mstar;
using namespace mstar::kernels;

TEST_CASE("ring upsert: byte for byte as the reference, with and without the ring slot") {
  for (int32_t D : {17, 64, 97})
    for (DType dt : {DType::f32, DType::f16, DType::bf16})
      for (bool commit : {false, true}) {
        CAPTURE(D);
        CAPTURE(to_string(dt));
        CAPTURE(commit);
        test::Rng rng(static_cast<uint64_t>(D) + 11);
        const int32_t H = 2, T = 5, rows = 3;
        const int64_t total = 3 * 4 * T;  // three sessions of four frames
        std::vector<unsigned char> kv = test::random_values(rng, dt, 2 * H * total * D);
        const int64_t ts = H * D + 3;
        const std::vector<float> k = rng.normals(static_cast<size_t>(rows * T * ts)),
                                 v = rng.normals(static_cast<size_t>(rows * T * ts));
        const std::vector<int64_t> scratch{3 * T, 7 * T, 11 * T}, ring{0, -1, 9 * T};
        RingUpsertParams p;
        p.rows = rows;
        p.num_kv_heads = H;
        p.head_dim = D;
        p.tokens = T;
        p.kv_dtype = dt;
        p.total_slots = total;
        p.token_stride = ts;
        p.head_stride = D;
        std::vector<unsigned char> host = kv;
        RingUpsertParams hp = p;
        hp.kv = host.data();
        hp.k = k.data();
        hp.v = v.data();
        hp.scratch_start = scratch.data();
        hp.ring_start = commit ? ring.data() : nullptr;
        ring_upsert(Backend::reference, hp);
        DeviceBuffer dkv = test::upload(kv), dk = test::upload(k), dv = test::upload(v), ds = test::upload(scratch),
                     dr = test::upload(ring);
        p.kv = dkv.data();
        p.k = static_cast<const float*>(dk.data());
        p.v = static_cast<const float*>(dv.data());
        p.scratch_start = static_cast<const int64_t*>(ds.data());
        p.ring_start = commit ? static_cast<const int64_t*>(dr.data()) : nullptr;
        ring_upsert(test::backend_under_test(), p);
        CHECK(test::download<unsigned char>(dkv, kv.size()) == host);
      }
}
