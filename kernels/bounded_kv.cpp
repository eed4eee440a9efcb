// Device-neutral half of the bounded-KV ops: checks the scalars the kernels
// take on trust, then dispatches to the chosen backend. Tables are checked
// separately, on the host (check_bounded_tables), since on a device backend
// the pointers here are device memory.
#include "bounded_kv.h"

#include <fmt/format.h>

#include "core/errors.h"
#include "kernels/op_table.h"

namespace mstar::kernels {

namespace {

void check(bool ok, const char* op, const std::string& what) {
  if (!ok) throw InputError(fmt::format("{}: {}", op, what));
}

void check_heads(const char* op, int32_t rows, int32_t kv_heads, int32_t head_dim, int threads) {
  check(rows >= 0, op, fmt::format("rows must not be negative, got {}", rows));
  check(kv_heads > 0, op, fmt::format("num_kv_heads must be positive, got {}", kv_heads));
  check(head_dim > 0, op, fmt::format("head_dim must be positive, got {}", head_dim));
  check(threads >= 1, op, fmt::format("threads must be at least 1, got {}", threads));
}

}  // namespace

void bounded_attention(Backend backend, const BoundedAttentionParams& p) {
  constexpr const char* op = "bounded_attention";
  check_heads(op, p.rows, p.num_kv_heads, p.head_dim, p.threads);
  check(p.num_q_heads > 0 && p.num_q_heads % p.num_kv_heads == 0, op,
        fmt::format("num_q_heads {} must be a positive multiple of num_kv_heads {}", p.num_q_heads, p.num_kv_heads));
  check(p.scale > 0.0f, op, fmt::format("scale must be positive, got {}", p.scale));
  check(!p.rope_inv_freq || p.head_dim % 2 == 0, op,
        fmt::format("rotating keys on read needs an even head_dim, got {}", p.head_dim));
  if (p.rows == 0) return;
  // q, k, v and out may be null when the step has no queries or no entries;
  // their shapes are the caller's to check (it knows the step's sizes).
  check(p.table && p.address && p.q_indptr && p.kv_indptr, op, "table, address, q_indptr and kv_indptr are required");
  op_table(backend, op).bounded_attention(p);
}

void bounded_store(Backend backend, const BoundedStoreParams& p) {
  constexpr const char* op = "bounded_store";
  check_heads(op, p.rows, p.num_kv_heads, p.head_dim, p.threads);
  check(p.scratch_start >= 0, op, fmt::format("scratch_start must not be negative, got {}", p.scratch_start));
  if (p.rows == 0) return;
  check(p.table && p.address && p.kv_indptr, op, "table, address and kv_indptr are required");
  op_table(backend, op).bounded_store(p);
}

void bounded_commit(Backend backend, const BoundedCommitParams& p) {
  constexpr const char* op = "bounded_commit";
  check_heads(op, p.rows, p.num_kv_heads, p.head_dim, p.threads);
  check(p.scratch_start >= 0, op, fmt::format("scratch_start must not be negative, got {}", p.scratch_start));
  if (p.rows == 0) return;
  check(p.table && p.address, op, "table and address are required");
  op_table(backend, op).bounded_commit(p);
}

void check_bounded_tables(std::span<const BoundedRowTable> table, std::span<const int32_t> q_indptr,
                          std::span<const int32_t> kv_indptr, std::span<const int64_t> source_len,
                          const BoundedTableLimits& limits) {
  constexpr const char* op = "bounded tables";
  const auto rows = table.size();
  check(q_indptr.size() == rows + 1 && kv_indptr.size() == rows + 1 && source_len.size() == rows, op,
        fmt::format("{} rows need {} q_indptr and kv_indptr entries and {} source lengths, got {}, {} and {}", rows,
                    rows + 1, rows, q_indptr.size(), kv_indptr.size(), source_len.size()));
  check(q_indptr[0] == 0 && kv_indptr[0] == 0, op, "q_indptr and kv_indptr must start at 0");
  for (size_t r = 0; r < rows; ++r) {
    const int32_t q_len = q_indptr[r + 1] - q_indptr[r];
    const int32_t span = kv_indptr[r + 1] - kv_indptr[r];
    check(q_len >= 0, op, fmt::format("row {}: q_indptr decreases ({} -> {})", r, q_indptr[r], q_indptr[r + 1]));
    check(span >= 0, op, fmt::format("row {}: kv_indptr decreases ({} -> {})", r, kv_indptr[r], kv_indptr[r + 1]));
    const BoundedRowTable& t = table[r];
    if (t.slot == kPaddingRow) continue;
    check(t.slot >= 0, op, fmt::format("row {}: slot {} is neither a slot nor padding", r, t.slot));
    if (limits.mask == StepMask::causal)
      check(q_len <= span, op,
            fmt::format("row {}: causal attention needs at most as many queries as step entries, got {} queries for "
                        "a span of {}",
                        r, q_len, span));
    for (const KVRead& rd : t.reads) {
      check(rd.len >= 0 && rd.start >= 0, op, fmt::format("row {}: read range ({}, {}) is negative", r, rd.start, rd.len));
      if (rd.len == 0) continue;
      const int64_t end = static_cast<int64_t>(rd.start) + rd.len;
      if (rd.from_source)
        check(end <= source_len[r], op,
              fmt::format("row {}: reads source entries [{}, {}) of a source of {}", r, rd.start, end, source_len[r]));
      else
        check(end <= limits.slot_tokens, op,
              fmt::format("row {}: reads slot entries [{}, {}) of a slot of {}", r, rd.start, end, limits.slot_tokens));
    }
    int64_t kept = 0;
    for (const KVWrite& w : t.writes) {
      if (w.len == 0) continue;
      check(w.len > 0 && w.start >= 0 && (w.fresh_step == 1 || w.fresh_step == -1), op,
            fmt::format("row {}: write range ({}, {}, step {}) is malformed", r, w.start, w.len, w.fresh_step));
      const int64_t last = w.fresh + static_cast<int64_t>(w.len - 1) * w.fresh_step;
      check(w.fresh >= 0 && w.fresh < span && last >= 0 && last < span, op,
            fmt::format("row {}: write range takes step entries {}..{} of a span of {}", r, w.fresh, last, span));
      check(static_cast<int64_t>(w.start) + w.len <= limits.slot_tokens, op,
            fmt::format("row {}: writes slot entries [{}, {}) of a slot of {}", r, w.start,
                        static_cast<int64_t>(w.start) + w.len, limits.slot_tokens));
      kept += w.len;
    }
    check(kept <= limits.scratch_tokens, op,
          fmt::format("row {}: keeps {} entries but the scratch holds {}", r, kept, limits.scratch_tokens));
  }
}

}  // namespace mstar::kernels
