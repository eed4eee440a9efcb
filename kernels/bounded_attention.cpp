// Device-neutral half of bounded attention: checks what the kernels take on
// trust, then dispatches to the chosen backend.
#include "bounded_attention.h"

#include <fmt/format.h>

#include "core/errors.h"

namespace mstar::kernels {

namespace {

void check(bool ok, const std::string& what) {
  if (!ok) throw InputError("bounded_attention: " + what);
}

void validate(const BoundedAttentionParams& p) {
  check(p.rows >= 0, fmt::format("rows must not be negative, got {}", p.rows));
  check(p.num_kv_heads > 0, fmt::format("num_kv_heads must be positive, got {}", p.num_kv_heads));
  check(p.head_dim > 0, fmt::format("head_dim must be positive, got {}", p.head_dim));
  check(p.num_q_heads > 0 && p.num_q_heads % p.num_kv_heads == 0,
        fmt::format("num_q_heads {} must be a positive multiple of num_kv_heads {}", p.num_q_heads, p.num_kv_heads));
  check(p.threads >= 1, fmt::format("threads must be at least 1, got {}", p.threads));
  check(p.scale > 0.0f, fmt::format("scale must be positive, got {}", p.scale));
  check(!p.rope_inv_freq || p.head_dim % 2 == 0,
        fmt::format("rotating keys on read needs an even head_dim, got {}", p.head_dim));
  if (p.rows == 0) return;
  check(p.table && p.address && p.q_indptr && p.kv_indptr, "table, address, q_indptr and kv_indptr are required");
  check(p.q_indptr[0] == 0 && p.kv_indptr[0] == 0, "q_indptr and kv_indptr must start at 0");
  for (int32_t r = 0; r < p.rows; ++r) {
    const int32_t q_len = p.q_indptr[r + 1] - p.q_indptr[r];
    const int32_t span = p.kv_indptr[r + 1] - p.kv_indptr[r];
    check(q_len >= 0, fmt::format("row {}: q_indptr decreases ({} -> {})", r, p.q_indptr[r], p.q_indptr[r + 1]));
    check(span >= 0, fmt::format("row {}: kv_indptr decreases ({} -> {})", r, p.kv_indptr[r], p.kv_indptr[r + 1]));
    const BoundedRowTable& t = p.table[r];
    if (t.slot < 0) continue;
    if (p.mask == StepMask::causal)
      check(q_len <= span, fmt::format("row {}: causal attention needs at most as many queries as step entries, "
                                       "got {} queries for a span of {}",
                                       r, q_len, span));
    for (const KVRead& rd : t.reads) {
      check(rd.len >= 0 && rd.start >= 0, fmt::format("row {}: read range ({}, {}) is negative", r, rd.start, rd.len));
      if (rd.len > 0 && rd.from_source)
        check(p.address[r].source != nullptr, fmt::format("row {}: reads its source but has none", r));
    }
    for (const KVWrite& w : t.writes) {
      if (w.len == 0) continue;
      const int32_t last = w.fresh + (w.len - 1) * w.fresh_step;
      check(w.fresh >= 0 && w.fresh < span && last >= 0 && last < span,
            fmt::format("row {}: write range takes step entries {}..{} of a span of {}", r, w.fresh, last, span));
    }
    check(p.address[r].slot != nullptr, fmt::format("row {}: slot {} has no address", r, t.slot));
  }
  const int32_t total_q = p.q_indptr[p.rows];
  const int32_t total_kv = p.kv_indptr[p.rows];
  check(total_q == 0 || (p.q && p.out), "q and out are required when there are queries");
  check(total_kv == 0 || (p.k && p.v), "k and v are required when there are step entries");
}

}  // namespace

void bounded_attention(Backend backend, const BoundedAttentionParams& p) {
  validate(p);
  switch (backend) {
    case Backend::reference: return bounded_attention_reference(p);
    case Backend::cpu: return bounded_attention_cpu(p);
    default:
      throw InputError(fmt::format("bounded_attention: backend '{}' is not built into this binary", to_string(backend)));
  }
}

}  // namespace mstar::kernels
