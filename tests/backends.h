#pragma once
// The backends a test runs its cases on, from the registry of op tables
// (kernels/op_table.h), never a literal list: a backend built into this
// binary is tested as soon as it is registered.
#include <vector>

#include "kernels/op_table.h"

namespace mstar::test {

// The built backends whose ops take host memory (the test's own buffers),
// reference first.
inline std::vector<Backend> host_backends() {
  std::vector<Backend> out;
  for (Backend b : kernels::built_backends())
    if (kernels::op_table(b, "test").host_memory) out.push_back(b);
  return out;
}

}  // namespace mstar::test
