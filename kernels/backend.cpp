#include "backend.h"

#include <span>

#include <fmt/format.h>

#include "core/errors.h"
#include "kernels/cuda/device.h"
#include "kernels/op_table.h"

namespace mstar {

std::string_view to_string(Backend b) {
  switch (b) {
    case Backend::reference: return "reference";
    case Backend::cpu: return "cpu";
    case Backend::cuda: return "cuda";
  }
  return "?";
}

Backend parse_backend(std::string_view text, std::string_view what) {
  if (text == "reference") return Backend::reference;
  if (text == "cpu") return Backend::cpu;
  if (text == "cuda") return Backend::cuda;
  throw ConfigError(fmt::format("{}: unknown backend '{}' (expected reference, cpu or cuda)", what, text));
}

bool backend_available(Backend b, std::string* why) {
  if (b != Backend::cuda) return true;
#ifdef MSTAR_WITH_CUDA
  return kernels::cuda_device_available(why);
#else
  if (why) *why = "this binary was built without the CUDA backend (no nvcc was found at build time)";
  return false;
#endif
}

Allocator& allocator_for(Backend b) {
#ifdef MSTAR_WITH_CUDA
  if (b == Backend::cuda) return kernels::cuda_allocator();
#endif
  MSTAR_ASSERT(b != Backend::cuda, "allocator_for: the cuda backend is not built into this binary");
  return host_allocator();
}

namespace kernels {

namespace {

// Every backend built into this binary: one line per backend folder. A
// plain array, which nothing destroys at exit: an engine held in a static
// (an embedder's, the fuzz harnesses') still releases its weights through
// it while the process ends.
std::span<const OpTable* const> tables() {
  static const OpTable* const t[] = {
      &reference_op_table(),
      &cpu_op_table(),
#ifdef MSTAR_WITH_CUDA
      &cuda_op_table(),
#endif
  };
  return t;
}

}  // namespace

const OpTable& op_table(Backend b, const char* op) {
  for (const OpTable* t : tables())
    if (t->backend == b) return *t;
  throw InputError(fmt::format("{}: backend '{}' is not built into this binary", op, to_string(b)));
}

std::vector<Backend> built_backends() {
  std::vector<Backend> out;
  for (const OpTable* t : tables()) out.push_back(t->backend);
  return out;
}

}  // namespace kernels

void synchronize(Backend b) {
#ifdef MSTAR_WITH_CUDA
  if (b == Backend::cuda) kernels::cuda_synchronize();
#else
  (void)b;
#endif
}

}  // namespace mstar
