#pragma once
// The bounded resource's buffers, from the backend's allocator, and the
// kernel ops that read and write them. It holds no bookkeeping: it is told
// which plan a step follows (stage) and does what the plan says.
#include <cstdint>
#include <map>
#include <optional>
#include <span>
#include <vector>

#include "kernels/bounded_kv.h"
#include "core/allocator.h"
#include "core/buffer.h"
#include "resources/attention_memory.h"
#include "resources/bounded_kv/book.h"
#include "resources/bounded_kv/config.h"
#include "resources/options.h"
#include "resources/staging.h"

namespace mstar {

class BoundedKVStorage {
 public:
  // Allocates every layer's slot pool: [max_slots, R, H, slot_tokens, 2D].
  BoundedKVStorage(const BoundedKVConfig& config, const ResourceOptions& options);

  // A source's buffer, [num_layers, R, H, len, 2D], written layer by layer
  // (write_source) and read in place by every request that names it.
  void add_source(int id, int64_t len);
  void drop_source(int id);
  // Row `row` of source `id` at `layer`: k and v ([len, H, D] f32, backend
  // memory) stored in the cache dtype.
  void write_source(int id, int64_t layer, int64_t row, ConstTensorView k, ConstTensorView v);
  // Attention of args.q over args.k and args.v alone (one row, q_indptr
  // {0, n}, no stored entries): a source's own prefill.
  void self_attend(const LayerPass& args);

  // The step every attend and commit below follows, until the next stage.
  void stage(const BoundedKVPlan& plan);
  // Attention for every row of the staged step at `layer`, then the step's
  // kept entries into each row's scratch. Row r's queries are
  // q[q_indptr[r], q_indptr[r+1]) and its step entries k/v[kv_indptr[r],
  // kv_indptr[r+1]) of the plan (its span; padding rows have none).
  void attend(int64_t layer, const LayerPass& args);
  // Each row's scratch into place, in every layer: what commit makes final.
  void commit();

  std::size_t pool_bytes() const;
  std::size_t source_bytes() const;
  // A copy of one layer's pool, for tests.
  std::vector<unsigned char> read_layer(int64_t layer) const;
  // One slot's retained entries in one layer, [R, H, retained_tokens, 2D] in
  // the cache dtype, copied to the host (the scratch past them holds nothing
  // between steps); and back.
  HostBuffer copy_slot(int64_t layer, int32_t slot) const;
  void load_slot(int64_t layer, int32_t slot, const HostBuffer& kv);

 private:
  struct Source {
    DeviceBuffer kv;  // [num_layers, R, H, len, 2D]
    int64_t len = 0;
  };
  kernels::BoundedRowAddress slot_address(int64_t layer, int32_t slot, int32_t row_in_request);
  kernels::BoundedRowAddress source_address(int64_t layer, const Source& s, int32_t row) const;
  const Source& source(int id) const;
  void check_args(const char* op, const LayerPass& args, int64_t rows, int64_t total_kv) const;
  // The attention params the args give (tables and indptrs left to the caller).
  kernels::BoundedAttentionParams attention_params(const LayerPass& args, int64_t rows) const;
  // The step's q_indptr in the backend's memory, uploaded when it changes.
  const int32_t* queries(std::span<const int32_t> q_indptr);

  BoundedKVConfig config_;
  ResourceOptions options_;
  Allocator& alloc_;
  std::vector<DeviceBuffer> layers_;  // per layer: [max_slots, R, H, slot_tokens, 2D]
  std::map<int, Source> sources_;

  // The staged step.
  int64_t rows_ = 0;
  int64_t total_kv_ = 0;
  Staged<kernels::BoundedRowTable> table_;      // [rows]
  Staged<kernels::BoundedRowAddress> address_;  // [layers, rows]
  Staged<int32_t> kv_indptr_;                   // [rows + 1]
  Staged<int32_t> q_indptr_;                    // [rows + 1]
  const int32_t* q_indptr_dev_ = nullptr;
  std::vector<int64_t> source_len_;             // [rows]
};

}  // namespace mstar
