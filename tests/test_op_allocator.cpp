// The backend's allocator (allocator_for): what every other op test's
// memory comes from, so it is checked first: zero-filled allocations, copies
// both ways, overlapping copies as memmove, zero fills.
#include <doctest/doctest.h>

#include <algorithm>
#include <cstring>
#include <vector>

#include "kernels/op_table.h"
#include "on_backend.h"

using namespace mstar;

TEST_CASE("allocator: zero-filled allocations, copies both ways, overlapping copies as memmove") {
  Allocator& a = test::memory();
  // Host memory exactly where the backend says its ops read the host's.
  CHECK((a.device() == Device::cpu) == kernels::op_table(test::backend_under_test(), "test").host_memory);
  DeviceBuffer b(a, 1000);
  std::vector<unsigned char> host(1000, 0xab);
  a.copy_to_host(host.data(), b.data(), host.size());
  CHECK(std::all_of(host.begin(), host.end(), [](unsigned char c) { return c == 0; }));
  std::vector<int32_t> v(250);
  for (int i = 0; i < 250; ++i) v[static_cast<size_t>(i)] = i;
  a.copy_from_host(b.data(), v.data(), 1000);
  a.copy(static_cast<int32_t*>(b.data()) + 10, b.data(), 100 * sizeof(int32_t));  // overlapping, forward
  std::vector<int32_t> back(250);
  a.copy_to_host(back.data(), b.data(), 1000);
  std::vector<int32_t> want = v;
  std::memmove(want.data() + 10, want.data(), 100 * sizeof(int32_t));
  CHECK(back == want);
  a.fill_zero(static_cast<int32_t*>(b.data()) + 3, 5 * sizeof(int32_t));
  a.copy_to_host(back.data(), b.data(), 1000);
  std::fill(want.begin() + 3, want.begin() + 8, 0);
  CHECK(back == want);
}
