#include "models/common_architecture.h"

namespace mstar {

bool read_common_architecture(FieldSource& src, CommonArchitecture& c) {
  if (!read_declared(src, c)) return false;
  bool ok = true;
  if (c.positions != "stream" && c.positions != "cache") {
    src.error("positions", fmt::format("{}: expected stream or cache, got '{}'", src.path("positions"), c.positions));
    ok = false;
  }
  if (c.heads % c.kv_heads != 0) {
    src.error("kv_heads", fmt::format("{} {} must divide heads {}", src.path("kv_heads"), c.kv_heads, c.heads));
    ok = false;
  }
  return ok;
}

TrunkNames inhouse_names(int64_t l) {
  const std::string p = fmt::format("layers.{}.", l);
  return {p + "attn_norm.weight", p + "attn.q.weight", p + "attn.k.weight", p + "attn.v.weight", p + "attn.o.weight",
          p + "mlp_norm.weight",  p + "mlp.gate.weight", p + "mlp.up.weight", p + "mlp.down.weight", "", "", "", "", ""};
}

void append_trunk_tensors(const CommonArchitecture& c, std::vector<TensorSpec>& t) {
  for (int64_t l = 0; l < c.layers; ++l) {
    const TrunkNames n = inhouse_names(l);
    t.push_back({n.attn_norm, {c.width}});
    t.push_back({n.q, {c.heads * c.head_dim, c.width}});
    t.push_back({n.k, {c.kv_heads * c.head_dim, c.width}});
    t.push_back({n.v, {c.kv_heads * c.head_dim, c.width}});
    t.push_back({n.o, {c.width, c.heads * c.head_dim}});
    t.push_back({n.mlp_norm, {c.width}});
    t.push_back({n.gate, {c.mlp_width, c.width}});
    t.push_back({n.up, {c.mlp_width, c.width}});
    t.push_back({n.down, {c.width, c.mlp_width}});
  }
  t.push_back({"final_norm.weight", {c.width}});
}

nlohmann::json common_json(const CommonArchitecture& c) {
  nlohmann::json j = nlohmann::json::object();
  for_each_field<CommonArchitecture>([&](const auto& d) { j[std::string(d.name)] = c.*(d.member); });
  return j;
}

}  // namespace mstar
