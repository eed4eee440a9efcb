// Device-neutral half of ring attention: checks what the kernels take on
// trust, then dispatches.
#include "ring_attention.h"

#include <fmt/format.h>

#include "core/errors.h"

namespace mstar::kernels {

namespace {

void check(bool ok, const std::string& what) {
  if (!ok) throw InputError("ring_attention: " + what);
}

void validate(const RingAttentionParams& p) {
  check(p.rows >= 0, fmt::format("rows must not be negative, got {}", p.rows));
  check(p.num_kv_heads > 0, fmt::format("num_kv_heads must be positive, got {}", p.num_kv_heads));
  check(p.head_dim > 0, fmt::format("head_dim must be positive, got {}", p.head_dim));
  check(p.q_tokens > 0, fmt::format("q_tokens must be positive, got {}", p.q_tokens));
  check(p.num_q_heads > 0 && p.num_q_heads % p.num_kv_heads == 0,
        fmt::format("num_q_heads {} must be a positive multiple of num_kv_heads {}", p.num_q_heads, p.num_kv_heads));
  check(p.threads >= 1, fmt::format("threads must be at least 1, got {}", p.threads));
  check(p.scale > 0.0f, fmt::format("scale must be positive, got {}", p.scale));
  if (p.rows == 0) return;
  check(p.keys && p.values && p.visible && p.span_lo && p.span_hi && p.q && p.out, "a required pointer is null");
  check(p.head_stride >= p.total_slots * p.head_dim,
        fmt::format("head_stride {} is smaller than total_slots {} x head_dim {}", p.head_stride, p.total_slots,
                    p.head_dim));
  for (int32_t r = 0; r < p.rows; ++r) {
    check(p.span_lo[r] >= 0 && p.span_lo[r] <= p.span_hi[r] && p.span_hi[r] <= p.total_slots,
          fmt::format("row {}: session span [{}, {}) outside [0, {})", r, p.span_lo[r], p.span_hi[r], p.total_slots));
    // The isolation rule the backends rely on: nothing visible outside the span.
    const uint8_t* vis = p.visible + r * p.visible_row_stride;
    for (int64_t i = 0; i < p.total_slots; ++i)
      if (vis[i] && (i < p.span_lo[r] || i >= p.span_hi[r]))
        check(false, fmt::format("row {}: slot {} is visible but outside its session span [{}, {})", r, i,
                                 p.span_lo[r], p.span_hi[r]));
  }
}

}  // namespace

void ring_attention(Backend backend, const RingAttentionParams& p) {
  validate(p);
  switch (backend) {
    case Backend::reference: return ring_attention_reference(p);
    case Backend::cpu: return ring_attention_cpu(p);
    default:
      throw InputError(fmt::format("ring_attention: backend '{}' is not built into this binary", to_string(backend)));
  }
}

}  // namespace mstar::kernels
