// Device-neutral half of the ring-KV ops: scalar checks and dispatch; the
// ranges are checked on the host by check_ring_tables.
#include "ring_kv.h"

#include <fmt/format.h>

#include "core/errors.h"
#include "kernels/op_table.h"

namespace mstar::kernels {

namespace {

void check(bool ok, const char* op, const std::string& what) {
  if (!ok) throw InputError(fmt::format("{}: {}", op, what));
}

void check_common(const char* op, int32_t rows, int32_t kv_heads, int32_t head_dim, int32_t tokens, int threads) {
  check(rows >= 0, op, fmt::format("rows must not be negative, got {}", rows));
  check(kv_heads > 0, op, fmt::format("num_kv_heads must be positive, got {}", kv_heads));
  check(head_dim > 0, op, fmt::format("head_dim must be positive, got {}", head_dim));
  check(tokens > 0, op, fmt::format("tokens per frame must be positive, got {}", tokens));
  check(threads >= 1, op, fmt::format("threads must be at least 1, got {}", threads));
}

}  // namespace

void ring_upsert(Backend backend, const RingUpsertParams& p) {
  constexpr const char* op = "ring_upsert";
  check_common(op, p.rows, p.num_kv_heads, p.head_dim, p.tokens, p.threads);
  if (p.rows == 0) return;
  check(p.kv && p.k && p.v && p.scratch_start, op, "kv, k, v and scratch_start are required");
  check(p.total_slots > 0, op, fmt::format("total_slots must be positive, got {}", p.total_slots));
  op_table(backend, op).ring_upsert(p);
}

void ring_attention(Backend backend, const RingAttentionParams& p) {
  constexpr const char* op = "ring_attention";
  check_common(op, p.rows, p.num_kv_heads, p.head_dim, p.q_tokens, p.threads);
  check(p.num_q_heads > 0 && p.num_q_heads % p.num_kv_heads == 0, op,
        fmt::format("num_q_heads {} must be a positive multiple of num_kv_heads {}", p.num_q_heads, p.num_kv_heads));
  check(p.scale > 0.0f, op, fmt::format("scale must be positive, got {}", p.scale));
  if (p.rows == 0) return;
  check(p.kv && p.range_indptr && p.ranges && p.q && p.out, op, "a required pointer is null");
  op_table(backend, op).ring_attention(p);
}

void check_ring_tables(std::span<const int32_t> range_indptr, std::span<const RingRange> ranges,
                       std::span<const int64_t> scratch_start, std::span<const int64_t> ring_start,
                       std::span<const int64_t> span_lo, std::span<const int64_t> span_hi, int64_t tokens,
                       int64_t total_slots) {
  constexpr const char* op = "ring tables";
  const size_t rows = span_lo.size();
  check(range_indptr.size() == rows + 1 && span_hi.size() == rows && scratch_start.size() == rows &&
            ring_start.size() == rows,
        op, fmt::format("{} rows need {} range_indptr entries and one scratch, ring and span per row", rows, rows + 1));
  check(range_indptr[0] == 0 && static_cast<size_t>(range_indptr[rows]) == ranges.size(), op,
        fmt::format("range_indptr must run from 0 to the {} ranges", ranges.size()));
  for (size_t r = 0; r < rows; ++r) {
    const int64_t lo = span_lo[r], hi = span_hi[r];
    check(lo >= 0 && lo <= hi && hi <= total_slots, op,
          fmt::format("row {}: session span [{}, {}) outside [0, {})", r, lo, hi, total_slots));
    auto inside = [&](int64_t start, int64_t len) { return len >= 0 && start >= lo && start + len <= hi; };
    check(inside(scratch_start[r], tokens), op,
          fmt::format("row {}: scratch frame at {} outside its session span [{}, {})", r, scratch_start[r], lo, hi));
    check(ring_start[r] == -1 || inside(ring_start[r], tokens), op,
          fmt::format("row {}: ring slot at {} outside its session span [{}, {})", r, ring_start[r], lo, hi));
    check(range_indptr[r] <= range_indptr[r + 1], op, fmt::format("row {}: range_indptr decreases", r));
    // The isolation rule the backends rely on: nothing visible outside the span.
    for (int32_t i = range_indptr[r]; i < range_indptr[r + 1]; ++i)
      check(inside(ranges[static_cast<size_t>(i)].start, ranges[static_cast<size_t>(i)].len), op,
            fmt::format("row {}: visible slots [{}, {}) outside its session span [{}, {})", r,
                        ranges[static_cast<size_t>(i)].start,
                        ranges[static_cast<size_t>(i)].start + ranges[static_cast<size_t>(i)].len, lo, hi));
  }
}

}  // namespace mstar::kernels
