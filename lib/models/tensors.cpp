#include "models/tensors.h"

#include <fmt/format.h>

namespace mstar {

int64_t TensorSpec::numel() const {
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  return n;
}

std::vector<TensorSpec> expected_tensors(ModelKind kind, const Architecture& a) {
  const auto& c = a.common;
  std::vector<TensorSpec> t;
  if (kind == ModelKind::tts) {
    t.push_back({"embed.weight", {a.tts.vocab_size, c.width}});
  } else {
    t.push_back({"latent_in.weight", {c.width, a.world.latent_channels}});
    if (a.world.control_dim > 0) t.push_back({"control_in.weight", {c.width, a.world.control_dim}});
  }
  for (int64_t l = 0; l < c.layers; ++l) {
    const std::string p = fmt::format("layers.{}.", l);
    t.push_back({p + "attn_norm.weight", {c.width}});
    t.push_back({p + "attn.q.weight", {c.heads * c.head_dim, c.width}});
    t.push_back({p + "attn.k.weight", {c.kv_heads * c.head_dim, c.width}});
    t.push_back({p + "attn.v.weight", {c.kv_heads * c.head_dim, c.width}});
    t.push_back({p + "attn.o.weight", {c.width, c.heads * c.head_dim}});
    t.push_back({p + "mlp_norm.weight", {c.width}});
    t.push_back({p + "mlp.gate.weight", {c.mlp_width, c.width}});
    t.push_back({p + "mlp.up.weight", {c.mlp_width, c.width}});
    t.push_back({p + "mlp.down.weight", {c.width, c.mlp_width}});
  }
  t.push_back({"final_norm.weight", {c.width}});
  if (kind == ModelKind::tts) t.push_back({"head.weight", {a.tts.vocab_size, c.width}});
  else t.push_back({"latent_out.weight", {a.world.latent_channels, c.width}});
  return t;
}

std::size_t weights_bytes(ModelKind kind, const Architecture& arch, DType dtype) {
  std::size_t n = 0;
  for (const auto& t : expected_tensors(kind, arch)) n += static_cast<std::size_t>(t.numel());
  return n * dtype_size(dtype);
}

}  // namespace mstar
