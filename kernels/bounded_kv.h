#pragma once
// Bounded-KV ops: attention, store and commit. Each op is this header, a
// device-neutral file that checks and dispatches (bounded_kv.cpp), and one
// file per backend (reference/, cpu/, cuda/). Kernels see plain pointers,
// sizes and strides, never engine objects.
//
// A step's rows follow one host-planned table each (which stored entries the
// row reads, in stream order, and where its new entries go). The three ops:
//   attention  each row's queries over its retained entries (from the shared
//              source or the row's slot) plus the step's own entries, which
//              arrive in f32;
//   store      the step's entries that retention keeps, rounded to the cache
//              dtype, into the slot's scratch region (where no retained entry
//              lives), so a step that is never committed changes nothing a
//              later step reads;
//   commit     the scratch copied into place (sink and window ring), the only
//              op that changes retained entries.
//
// Every pointer below is in the memory of the backend the op runs on: host
// memory for reference and cpu, device memory for cuda. The dispatchers
// check only scalars; the tables are checked on the host, from bookkeeping,
// by check_bounded_tables before they are uploaded.
#include <cstdint>
#include <span>

#include "backend.h"
#include "core/dtype.h"

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
// the stream last-first (reverse_step_order). Store puts the ranges, in
// order, back to back into the scratch; commit moves them to `start`.
struct KVWrite {
  int32_t fresh = 0;
  int32_t fresh_step = 1;
  int32_t start = 0;
  int32_t len = 0;
};

constexpr int32_t kPaddingRow = -1;

// One row's whole layout: the table the host plans and the kernels follow.
struct BoundedRowTable {
  int32_t slot = kPaddingRow;  // kPaddingRow: reads and writes nothing, outputs zeros
  KVRead reads[5];
  KVWrite writes[3];
};

// Where a row's stored entries are at one layer. Stored entries are
// [H, tokens, 2D]: keys in [0, D), values in [D, 2D) of the last axis, so one
// gather reads both. A slot that holds nothing (slot_tokens 0) has no address.
struct BoundedRowAddress {
  void* slot = nullptr;            // this row's [H, slot_tokens, 2D] block, or null
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

  const BoundedRowTable* table = nullptr;      // [rows]
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

// The step's kept entries into each row's scratch (or, for a source being
// prefilled, straight into the source: scratch_start 0 and one write range).
struct BoundedStoreParams {
  int32_t rows = 0;
  int32_t num_kv_heads = 0;
  int32_t head_dim = 0;
  DType kv_dtype = DType::f32;
  int32_t scratch_start = 0;  // slot offset of the scratch region
  int threads = 1;
  const BoundedRowTable* table = nullptr;      // [rows]
  const BoundedRowAddress* address = nullptr;  // [rows]: the slot written (or the source)
  const int32_t* kv_indptr = nullptr;          // [rows + 1]
  const float* k = nullptr;                    // [total_kv, H, D]
  const float* v = nullptr;                    // [total_kv, H, D]
  int64_t kv_token_stride = 0, kv_head_stride = 0;
};

// Each row's scratch moved to its write ranges' slot offsets.
struct BoundedCommitParams {
  int32_t rows = 0;
  int32_t num_kv_heads = 0;
  int32_t head_dim = 0;
  DType kv_dtype = DType::f32;
  int32_t scratch_start = 0;
  int threads = 1;
  const BoundedRowTable* table = nullptr;      // [rows]
  const BoundedRowAddress* address = nullptr;  // [rows]
};

// Throws InputError naming the field and value when a scalar is out of range
// or a required pointer is null, then runs the backend.
void bounded_attention(Backend backend, const BoundedAttentionParams& p);
void bounded_store(Backend backend, const BoundedStoreParams& p);
void bounded_commit(Backend backend, const BoundedCommitParams& p);

// What the tables of one step may address, for the host-side check.
struct BoundedTableLimits {
  int64_t slot_tokens = 0;     // entries a slot holds before its scratch
  int64_t scratch_tokens = 0;  // entries of the scratch region
  StepMask mask = StepMask::full;
};
// Checks host copies of a step's tables against the geometry (every range
// inside the slot, the source or the step; writes fit the scratch; causal
// rows have no more queries than entries). source_len[r] is row r's source
// length (0: none). Throws InputError naming the row and the range.
void check_bounded_tables(std::span<const BoundedRowTable> table, std::span<const int32_t> q_indptr,
                          std::span<const int32_t> kv_indptr, std::span<const int64_t> source_len,
                          const BoundedTableLimits& limits);

// The backends, for the dispatcher and for tests that call one directly.
void bounded_attention_reference(const BoundedAttentionParams& p);
void bounded_attention_cpu(const BoundedAttentionParams& p);
void bounded_store_host(const BoundedStoreParams& p);
void bounded_commit_host(const BoundedCommitParams& p);

}  // namespace mstar::kernels
