#pragma once
// The CUDA backend's entry points, one per op, taking the same params
// structs as every backend (defined in kernels/cuda/*.cu, built only where
// nvcc was found). Each enqueues on the backend's stream; pointers are device
// memory.
#include "kernels/bounded_kv.h"
#include "kernels/ops.h"
#include "kernels/ring_kv.h"

namespace mstar::kernels {

void bounded_attention_cuda(const BoundedAttentionParams& p);
void bounded_store_cuda(const BoundedStoreParams& p);
void bounded_commit_cuda(const BoundedCommitParams& p);
void ring_upsert_cuda(const RingUpsertParams& p);
void ring_attention_cuda(const RingAttentionParams& p);

void matmul_cuda(const MatmulParams& p);
void rmsnorm_cuda(const RmsNormParams& p);
void silu_mul_cuda(const SiluMulParams& p);
void rope_cuda(const RopeParams& p);
void embed_cuda(const EmbedParams& p);
void gather_rows_cuda(const GatherRowsParams& p);
void add_rows_cuda(const AddRowsParams& p);
void lerp_cuda(const LerpParams& p);

}  // namespace mstar::kernels
