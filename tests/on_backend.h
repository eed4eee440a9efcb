#pragma once
// The per-backend test program, mstar_backend_tests (backend_main.cpp): it
// runs once per built backend but the reference (`mstar_backend_tests
// --backend NAME [doctest options]`, choice_args.h), and its tests, one file
// per op (test_op_*.cpp), run that op's cases on the backend in memory from
// the backend's own allocator, against the reference on the host. One ctest
// per backend; a device backend with no device visible is reported as
// skipped (exit 77), not passed. A new backend is tested by adding its name
// to the list in tests/CMakeLists.txt.
#include <algorithm>
#include <cstdint>
#include <cstring>
#include <vector>

#include "choice_args.h"
#include "core/allocator.h"
#include "core/dtype.h"
#include "kernels/backend.h"
#include "support.h"

namespace mstar::test {

// The backend this run covers, and where its buffers come from.
Backend backend_under_test();
inline Allocator& memory() { return allocator_for(backend_under_test()); }

// The program's command line; `available` says whether a backend can run
// here and why not (passed in, so the skip path is tested on any machine).
ChoiceArgs parse_backend_args(int argc, const char* const* argv, bool (*available)(Backend, std::string*));

// A host array copied into the backend's memory (at least one byte, so an
// empty array has an address).
template <class T>
DeviceBuffer upload(const std::vector<T>& v) {
  DeviceBuffer b(memory(), std::max<std::size_t>(1, v.size() * sizeof(T)));
  if (!v.empty()) memory().copy_from_host(b.data(), v.data(), v.size() * sizeof(T));
  return b;
}

// The first n elements of b, once every op enqueued before has finished.
template <class T>
std::vector<T> download(const DeviceBuffer& b, std::size_t n) {
  std::vector<T> v(n);
  synchronize(backend_under_test());
  if (n) memory().copy_to_host(v.data(), b.data(), n * sizeof(T));
  return v;
}

template <class T>
const T* as(const DeviceBuffer& b) {
  return static_cast<const T*>(b.data());
}
template <class T>
T* as(DeviceBuffer& b) {
  return static_cast<T*>(b.data());
}

// `count` random normal values stored in dtype dt: bytes.
inline std::vector<unsigned char> random_values(Rng& rng, DType dt, int64_t count) {
  std::vector<unsigned char> b(row_bytes(dt, count));
  for (int64_t i = 0; i < count; ++i) store_from_f32(b.data(), dt, static_cast<std::size_t>(i), rng.normal());
  return b;
}

}  // namespace mstar::test
