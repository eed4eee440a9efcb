#pragma once
// Bounded-KV attention: one op, as a header (this file), a device-neutral
// file that validates and dispatches (bounded_attention.cpp), and one file
// per backend (reference/, cpu/). Kernels see plain pointers, sizes and
// strides, never engine objects, so a CUDA backend slots in beside them.
//
// For every row of a step: its queries attend to the row's retained entries
// (at most five ranges, read from the shared source or the row's slot) plus
// the step's own keys, then the step's keys and values are stored into the
// slot per the row's write ranges. Reads happen before writes: a step's ring
// writes may overwrite entries the same step reads.
#include <cstdint>

#include "backend.h"
#include "core/dtype.h"
#include "rope.h"

namespace mstar::kernels {

// A read range: `len` stored entries from `start`, in the source (from_source
// = 1) or the slot (0). Ranges are in stream order, oldest first.
struct KVRead {
  int32_t from_source = 0;
  int32_t start = 0;
  int32_t len = 0;
};

// A write range: step entry fresh + i * fresh_step goes to slot offset
// start + i, for i in [0, len). fresh_step is -1 when the step's entries join
// the stream last-first (reverse_step_order).
struct KVWrite {
  int32_t fresh = 0;
  int32_t fresh_step = 1;
  int32_t start = 0;
  int32_t len = 0;
};

// One row's whole layout: the table the host plans and the kernels follow.
struct BoundedRowTable {
  int32_t slot = -1;  // -1: padding, reads and writes nothing
  KVRead reads[5];
  KVWrite writes[3];
};

// Where a row's stored entries are at one layer. Stored entries are
// [H, tokens, 2D]: keys in [0, D), values in [D, 2D) of the last axis, so one
// gather reads both.
struct BoundedRowAddress {
  void* slot = nullptr;            // this row's [H, slot_tokens, 2D] block
  const void* source = nullptr;    // this row's [H, source_len, 2D] block, or null
  int64_t slot_head_stride = 0;    // elements between heads in the slot
  int64_t source_head_stride = 0;  // elements between heads in the source
};

enum class StepMask : uint8_t {
  full,    // every query sees every one of the step's own entries
  causal,  // query i of q_len sees the step's entries j <= span - q_len + i
};

struct BoundedAttentionParams {
  int32_t rows = 0;
  int32_t num_kv_heads = 0;
  int32_t num_q_heads = 0;  // a multiple of num_kv_heads (grouped-query attention)
  int32_t head_dim = 0;
  DType kv_dtype = DType::f32;  // storage dtype of slots and sources
  StepMask mask = StepMask::full;
  float scale = 0.0f;  // softmax scale applied to q.k
  // Rotary positions inside the retained cache (StreamingLLM): when set,
  // stored and step keys are unrotated and each is rotated on read by its
  // ordinal in the row's visible sequence (retained entries in stream order,
  // then the step's own); the caller rotates the queries to match.
  // [head_dim / 2] inverse frequencies, pairs (i, i + D/2); null: keys are
  // stored already rotated.
  const float* rope_inv_freq = nullptr;
  int threads = 1;

  const BoundedRowTable* table = nullptr;    // [rows]
  const BoundedRowAddress* address = nullptr;  // [rows]
  const int32_t* q_indptr = nullptr;   // [rows + 1]: row r's queries are [q_indptr[r], q_indptr[r+1])
  const int32_t* kv_indptr = nullptr;  // [rows + 1]: row r's step entries (its span)

  const float* q = nullptr;  // [total_q, Hq, D]
  int64_t q_token_stride = 0, q_head_stride = 0;
  const float* k = nullptr;  // [total_kv, H, D]
  const float* v = nullptr;  // [total_kv, H, D]
  int64_t kv_token_stride = 0, kv_head_stride = 0;
  float* out = nullptr;  // [total_q, Hq, D]; padding rows get zeros
  int64_t out_token_stride = 0, out_head_stride = 0;
};

// Validates the params (throws InputError naming the field and value) and
// runs the backend.
void bounded_attention(Backend backend, const BoundedAttentionParams& p);

// The backends, for the dispatcher and for tests that call one directly.
void bounded_attention_reference(const BoundedAttentionParams& p);
void bounded_attention_cpu(const BoundedAttentionParams& p);

}  // namespace mstar::kernels
