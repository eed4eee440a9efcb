#pragma once
// Each backend's op bodies and what they take, as one table (CTranslate2's
// validate-then-dispatch, made data). A dispatcher (ops.cpp, bounded_kv.cpp,
// ring_kv.cpp) checks an op's params once, device-neutrally, asks the
// backend's table whether it takes them, and calls the body. Capabilities are
// the backend's to declare, never tested by name in a dispatcher. A new
// backend is a folder of bodies and one table in backend.cpp's list.
#include <cstdint>
#include <vector>

#include "kernels/backend.h"
#include "kernels/bounded_kv.h"
#include "kernels/ops.h"
#include "kernels/ring_kv.h"
#include "kernels/weight_layout.h"

namespace mstar::kernels {

struct OpTable {
  Backend backend;
  // Whether its ops read and write host memory (the pointers a caller on the
  // host holds), or a device's.
  bool host_memory = false;

  // What its products take: weights of dtype w (bodies exist for it),
  // activations rounded to bf16 or quantised to q8_0 for block-type weights
  // (MatmulParams::x_dtype), weights and embedding tables laid out as pair
  // panels.
  bool (*takes_weights)(DType w) = nullptr;
  bool bf16_activations = false;
  bool q8_0_activations = false;
  bool pair_panels = false;
  // The layout its products read a matrix of dtype w and width `in`
  // fastest in (one it takes).
  WeightLayout (*preferred_layout)(DType w, int64_t in) = nullptr;

  // The bodies; every one is required but matmul_group, release_weights and
  // those marked below.
  void (*matmul)(const MatmulParams&) = nullptr;
  void (*matmul_group)(const MatmulParams* ps, int n) = nullptr;  // null: each product by matmul
  void (*release_weights)() = nullptr;  // null: nothing reads weights after a product returns
  void (*rmsnorm)(const RmsNormParams&) = nullptr;
  void (*silu_mul)(const SiluMulParams&) = nullptr;
  // Bodies a backend may not have yet (null: the op refuses it, naming it).
  void (*layer_norm)(const LayerNormParams&) = nullptr;
  void (*activate)(const ActivateParams&) = nullptr;
  void (*rope)(const RopeParams&) = nullptr;
  void (*embed)(const EmbedParams&) = nullptr;
  void (*gather_rows)(const GatherRowsParams&) = nullptr;
  void (*add_rows)(const AddRowsParams&) = nullptr;
  void (*lerp)(const LerpParams&) = nullptr;
  void (*bounded_attention)(const BoundedAttentionParams&) = nullptr;
  void (*bounded_store)(const BoundedStoreParams&) = nullptr;
  void (*bounded_commit)(const BoundedCommitParams&) = nullptr;
  void (*ring_upsert)(const RingUpsertParams&) = nullptr;
  void (*ring_attention)(const RingAttentionParams&) = nullptr;
};

// Backend b's table. Throws InputError naming `op` and b when b is not built
// into this binary.
const OpTable& op_table(Backend b, const char* op);
// The backends built into this binary, reference first (a built device
// backend may still find no device: backend_available).
std::vector<Backend> built_backends();

// The tables, one per backend folder (reference/table.cpp, cpu/table.cpp,
// cuda/table.cpp); backend.cpp lists them.
const OpTable& reference_op_table();
const OpTable& cpu_op_table();
const OpTable& cuda_op_table();

}  // namespace mstar::kernels
