#pragma once
// Ring-KV ops: upsert and attention (../shared/design/kv-semantics.md, "Ring
// KV"). A layer's storage is one [2, H_kv, total_slots, D] buffer, keys then
// values. Rows are sessions' frames of `tokens` queries each.
//   upsert     one frame per row into the row's scratch frame and, when it
//              commits on a write step, also into its ring slot: one pass
//              over the model's K/V, read where the model left them;
//   attention  each row's queries over the token-slot ranges the host says
//              are visible to it (written frames of its own session, scratch
//              included, minus the slot being overwritten), bidirectional
//              within the frame.
// Which slots are written and visible is the host's bookkeeping; the kernels
// read ranges, never flags. Pointers are in the backend's memory.
#include <cstdint>
#include <span>

#include "backend.h"
#include "core/dtype.h"

namespace mstar::kernels {

// A run of consecutive visible token slots.
struct RingRange {
  int64_t start = 0;
  int64_t len = 0;
};

struct RingUpsertParams {
  int32_t rows = 0;
  int32_t num_kv_heads = 0;
  int32_t head_dim = 0;
  int32_t tokens = 0;  // tokens per frame (T)
  DType kv_dtype = DType::f32;
  int threads = 1;
  void* kv = nullptr;  // [2, H_kv, total_slots, D]
  int64_t total_slots = 0;
  // Row b's frame is tokens [b*T, (b+1)*T) of k and v: [rows * T, H_kv, D] f32.
  const float* k = nullptr;
  const float* v = nullptr;
  int64_t token_stride = 0, head_stride = 0;
  const int64_t* scratch_start = nullptr;  // [rows]: first token slot of the row's scratch frame
  // [rows]: first token slot of the ring slot to write, or -1; null when the
  // pass does not commit.
  const int64_t* ring_start = nullptr;
};

struct RingAttentionParams {
  int32_t rows = 0;
  int32_t num_kv_heads = 0;
  int32_t num_q_heads = 0;  // a multiple of num_kv_heads
  int32_t head_dim = 0;
  int32_t q_tokens = 0;  // queries per row (tokens_per_frame)
  DType kv_dtype = DType::f32;
  float scale = 0.0f;
  int threads = 1;

  const void* kv = nullptr;  // [2, H_kv, total_slots, D]
  int64_t total_slots = 0;
  // Row r sees ranges [range_indptr[r], range_indptr[r+1]), in slot order.
  const int32_t* range_indptr = nullptr;  // [rows + 1]
  const RingRange* ranges = nullptr;

  const float* q = nullptr;  // [rows * q_tokens, Hq, D]
  int64_t q_token_stride = 0, q_head_stride = 0;
  float* out = nullptr;  // [rows * q_tokens, Hq, D]
  int64_t out_token_stride = 0, out_head_stride = 0;
};

void ring_upsert(Backend backend, const RingUpsertParams& p);
void ring_attention(Backend backend, const RingAttentionParams& p);

// Host-side check of a step's ranges and target slots: every range inside
// the row's own session span [span_lo[r], span_hi[r]). Throws InputError
// naming the row and the range.
void check_ring_tables(std::span<const int32_t> range_indptr, std::span<const RingRange> ranges,
                       std::span<const int64_t> scratch_start, std::span<const int64_t> ring_start,
                       std::span<const int64_t> span_lo, std::span<const int64_t> span_hi, int64_t tokens,
                       int64_t total_slots);

void ring_upsert_host(const RingUpsertParams& p);
void ring_attention_reference(const RingAttentionParams& p);
void ring_attention_cpu(const RingAttentionParams& p);

}  // namespace mstar::kernels
