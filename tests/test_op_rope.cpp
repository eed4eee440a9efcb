// rope on the backend under test (on_backend.h) against the reference: one
// section and three (time, height, width), far positions, strided heads.
//
// Tolerance: the backend's sin and cos against the reference's, each a few
// ulps: 1e-6 absolute on O(1) values.
#include <doctest/doctest.h>

#include <vector>

#include "kernels/ops.h"
#include "kernels/rope.h"
#include "on_backend.h"

using namespace mstar;
using namespace mstar::kernels;

TEST_CASE("rope: one section and three (time, height, width), far positions, strided heads") {
  for (int32_t sections : {1, 3}) {
    CAPTURE(sections);
    test::Rng rng(static_cast<uint64_t>(sections));
    const int64_t tokens = 17;
    const int32_t heads = 3, D = sections == 1 ? 54 : 64;
    const int64_t head_stride = D + 2, token_stride = heads * head_stride + 1;
    std::vector<float> x = rng.normals(static_cast<size_t>(tokens * token_stride));
    const std::vector<float> f0 = rope_inv_freq(sections == 1 ? D : 24, 10000.0), f1 = rope_inv_freq(20, 10000.0),
                             f2 = rope_inv_freq(20, 10000.0);
    std::vector<int64_t> pos(static_cast<size_t>(tokens * sections));
    for (auto& v : pos) v = rng.uniform(0, 200000);
    RopeParams p;
    p.tokens = tokens;
    p.heads = heads;
    p.head_dim = D;
    p.token_stride = token_stride;
    p.head_stride = head_stride;
    p.sections = sections;
    if (sections == 1) {
      p.section[0] = {0, D / 2, f0.data()};
    } else {
      p.section[0] = {0, 12, f0.data()};
      p.section[1] = {12, 10, f1.data()};
      p.section[2] = {22, 10, f2.data()};
    }
    std::vector<float> want = x;
    RopeParams hp = p;
    hp.x = want.data();
    hp.positions = pos.data();
    rope_reference(hp);
    DeviceBuffer dx = test::upload(x), dpos = test::upload(pos), d0 = test::upload(f0), d1 = test::upload(f1),
                 d2 = test::upload(f2);
    p.x = static_cast<float*>(dx.data());
    p.positions = static_cast<const int64_t*>(dpos.data());
    p.section[0].inv_freq = static_cast<const float*>(d0.data());
    if (sections == 3) {
      p.section[1].inv_freq = static_cast<const float*>(d1.data());
      p.section[2].inv_freq = static_cast<const float*>(d2.data());
    }
    rope(test::backend_under_test(), p);
    CHECK(test::max_abs_diff(test::download<float>(dx, x.size()), want) <= 1e-6f);
  }
}
