#pragma once
// The ring resource's buffers, one [2, H_kv, total_slots, D] per layer from
// the backend's allocator, and the ops over them. No bookkeeping here: the
// staged plan says where each row's frame goes and what it sees.
#include <cstdint>
#include <optional>
#include <vector>

#include "core/allocator.h"
#include "core/buffer.h"
#include "resources/options.h"
#include "resources/ring_kv/book.h"
#include "resources/ring_kv/config.h"
#include "resources/staging.h"
#include "kernels/ring_kv.h"

namespace mstar {

class RingKVStorage {
 public:
  RingKVStorage(const RingKVConfig& config, const ResourceOptions& options);

  // The step every upsert and attend below follows, until the next stage.
  void stage(const RingKVPlan& plan);
  // Writes each row's frame at `layer` (k, v: [rows * T, H_kv, D] f32, the
  // model's layout, backend memory): into its scratch frame, and with
  // `commit` into its ring slot too where the frame writes one.
  void upsert(int64_t layer, ConstTensorView k, ConstTensorView v, bool commit);
  // Each row's queries (q: [rows * T, Hq, D]) over the token slots its plan
  // says are visible.
  void attend(int64_t layer, ConstTensorView q, TensorView out, std::optional<float> scale);

  // Zeroes one session in every layer.
  void zero_session(int32_t session);
  // One session's keys and values in one layer, [2, H_kv, capacity, D] in the
  // cache dtype, copied to the host; and back.
  HostBuffer copy_session(int64_t layer, int32_t session) const;
  void load_session(int64_t layer, int32_t session, const HostBuffer& kv);

  std::size_t memory_bytes() const;

 private:
  void check_layer(const char* op, int64_t layer) const;

  RingKVConfig config_;
  ResourceOptions options_;
  Allocator& alloc_;
  std::vector<DeviceBuffer> layers_;  // per layer: [2, H_kv, total_slots, D]

  // The staged step, per layer.
  struct StagedLayer {
    Staged<int64_t> scratch_start, ring_start;  // [rows]
    Staged<int32_t> range_indptr;               // [rows + 1]
    Staged<kernels::RingRange> ranges;
  };
  std::vector<StagedLayer> staged_;
  int64_t rows_ = 0;
};

}  // namespace mstar
