#include "models/trunk.h"

namespace mstar {

namespace {

enum Use : int { kH, kQ, kK, kV, kO, kG, kU };

}  // namespace

// Each projection of a layer and its name in the family's TrunkNames.
const std::pair<Trunk::Matrix Trunk::Layer::*, std::string TrunkNames::*> Trunk::kProjections[7] = {
    {&Layer::q, &TrunkNames::q},     {&Layer::k, &TrunkNames::k},   {&Layer::v, &TrunkNames::v},
    {&Layer::o, &TrunkNames::o},     {&Layer::gate, &TrunkNames::gate}, {&Layer::up, &TrunkNames::up},
    {&Layer::down, &TrunkNames::down}};

Trunk::Trunk(const TrunkShape& shape, ModelParams& params, const std::function<TrunkNames(int64_t)>& names,
             const std::string& final_norm, std::optional<DType> matrix_dtype, const ModelOptions& options)
    : shape_(shape), options_(options), release_{options.backend}, scratch_(allocator_for(options.backend)) {
  auto matrix = [&](const std::string& name) {
    const DType dt = matrix_dtype.value_or(params.weights().get(name).dtype);
    return Matrix{params.get(name, dt), dt, params.layout(name, dt)};
  };
  auto bias = [&](const std::string& name) { return name.empty() ? nullptr : params.f32(name); };
  for (int64_t l = 0; l < shape_.layers; ++l) {
    const TrunkNames n = names(l);
    Layer L{};
    L.attn_norm = params.f32(n.attn_norm);
    L.mlp_norm = params.f32(n.mlp_norm);
    for (auto [m, name] : kProjections) L.*m = matrix(n.*name);
    L.q_bias = bias(n.q_bias);
    L.k_bias = bias(n.k_bias);
    L.v_bias = bias(n.v_bias);
    layers_.push_back(L);
  }
  final_norm_ = params.f32(final_norm);
}

kernels::MatmulParams Trunk::product(const float* x, int64_t rows, int64_t in, const Matrix& w, int64_t out,
                                     float* y, bool accumulate, const float* bias) const {
  kernels::MatmulParams p;
  p.rows = rows;
  p.in = in;
  p.out = out;
  p.x = x;
  p.x_stride = in;
  p.x_dtype = options_.activations;
  p.w = w.w;
  p.w_dtype = w.dtype;
  p.w_layout = w.layout;
  p.bias = bias;
  p.y = y;
  p.y_stride = out;
  p.accumulate = accumulate;
  p.threads = options_.threads;
  p.weights_outlive_call = true;  // until ~Trunk (release_)
  return p;
}

void Trunk::project(const float* x, int64_t rows, int64_t in, const Matrix& w, int64_t out, float* y, bool accumulate,
                    const float* bias) {
  kernels::matmul(options_.backend, product(x, rows, in, w, out, y, accumulate, bias));
}

void Trunk::run(float* x, int64_t n, const LayerAttention& attend) {
  const Backend b = options_.backend;
  const int64_t W = shape_.width, hd = shape_.head_dim, qd = shape_.heads * hd, kd = shape_.kv_heads * hd,
                F = shape_.mlp_width;
  const auto un = static_cast<std::size_t>(n);
  float* h = scratch_.get<float>(kH, un * static_cast<std::size_t>(W));
  float* q = scratch_.get<float>(kQ, un * static_cast<std::size_t>(qd));
  float* k = scratch_.get<float>(kK, un * static_cast<std::size_t>(kd));
  float* v = scratch_.get<float>(kV, un * static_cast<std::size_t>(kd));
  float* o = scratch_.get<float>(kO, un * static_cast<std::size_t>(qd));
  float* g = scratch_.get<float>(kG, un * static_cast<std::size_t>(F));
  float* u = scratch_.get<float>(kU, un * static_cast<std::size_t>(F));
  auto norm = [&](const float* w, float* out) {
    kernels::rmsnorm(b, {n, W, x, w, shape_.norm_eps, out, options_.threads});
  };
  auto mm = [&](const float* in_x, int64_t in, const Matrix& w, int64_t out, float* y, bool acc) {
    kernels::matmul(b, product(in_x, n, in, w, out, y, acc, nullptr));
  };
  for (int64_t l = 0; l < shape_.layers; ++l) {
    const Layer& L = layers_[static_cast<size_t>(l)];
    norm(L.attn_norm, h);
    // q, k and v read one h, and gate and up another: one call each, so the
    // backend may run them as one job.
    const kernels::MatmulParams qkv[] = {product(h, n, W, L.q, qd, q, false, L.q_bias),
                                         product(h, n, W, L.k, kd, k, false, L.k_bias),
                                         product(h, n, W, L.v, kd, v, false, L.v_bias)};
    kernels::matmul_group(b, qkv, 3);
    attend(l, q, k, v, o);
    mm(o, qd, L.o, W, x, true);
    norm(L.mlp_norm, h);
    const kernels::MatmulParams gate_up[] = {product(h, n, W, L.gate, F, g, false, nullptr),
                                             product(h, n, W, L.up, F, u, false, nullptr)};
    kernels::matmul_group(b, gate_up, 2);
    kernels::silu_mul(b, {n * F, g, u, options_.threads});
    mm(g, F, L.down, W, x, true);
  }
}

void Trunk::final_norm(const float* x, int64_t n, float* out) {
  kernels::rmsnorm(options_.backend, {n, shape_.width, x, final_norm_, shape_.norm_eps, out, options_.threads});
}

}  // namespace mstar
