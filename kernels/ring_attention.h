#pragma once
// Ring-KV attention: every row (one session's frame of `q_tokens` queries)
// attends to the token slots its visibility row marks, all inside its own
// session's span. Storage is [H, total_slots, D] for keys and values each
// (two views of the layer's stacked [2, H, total_slots, D] buffer). The
// current frame is already in the session's scratch frame (upsert put it
// there), so it is attended like any other visible slot; within a frame
// attention is bidirectional.
#include <cstdint>

#include "backend.h"
#include "core/dtype.h"

namespace mstar::kernels {

struct RingAttentionParams {
  int32_t rows = 0;
  int32_t num_kv_heads = 0;
  int32_t num_q_heads = 0;  // a multiple of num_kv_heads
  int32_t head_dim = 0;
  int32_t q_tokens = 0;  // queries per row (tokens_per_frame)
  DType kv_dtype = DType::f32;
  float scale = 0.0f;
  int threads = 1;

  const void* keys = nullptr;    // [H, total_slots, D]
  const void* values = nullptr;  // [H, total_slots, D]
  int64_t head_stride = 0;       // elements between heads
  int64_t total_slots = 0;

  // [rows, total_slots]: 1 where the row may attend. Zero outside the row's
  // session span by construction; span_lo/span_hi say where that span is, so
  // a backend may read only there.
  const uint8_t* visible = nullptr;
  int64_t visible_row_stride = 0;
  const int64_t* span_lo = nullptr;  // [rows]
  const int64_t* span_hi = nullptr;  // [rows]

  const float* q = nullptr;  // [rows * q_tokens, Hq, D]
  int64_t q_token_stride = 0, q_head_stride = 0;
  float* out = nullptr;  // [rows * q_tokens, Hq, D]
  int64_t out_token_stride = 0, out_head_stride = 0;
};

void ring_attention(Backend backend, const RingAttentionParams& p);
void ring_attention_reference(const RingAttentionParams& p);
void ring_attention_cpu(const RingAttentionParams& p);

}  // namespace mstar::kernels
