#include "models/trunk.h"

namespace mstar {

namespace {

enum Use : int { kH, kQ, kK, kV, kO, kG, kU };

}  // namespace

// Each projection every layer has, and its name in the family's TrunkNames
// (the gate, which only a gated feed-forward block has, apart).
const std::pair<Trunk::Matrix Trunk::Layer::*, std::string TrunkNames::*> Trunk::kProjections[6] = {
    {&Layer::q, &TrunkNames::q}, {&Layer::k, &TrunkNames::k},   {&Layer::v, &TrunkNames::v},
    {&Layer::o, &TrunkNames::o}, {&Layer::up, &TrunkNames::up}, {&Layer::down, &TrunkNames::down}};

Trunk::Trunk(const TrunkShape& shape, ModelParams& params, const std::function<TrunkNames(int64_t)>& names,
             const std::string& final_norm, const std::string& final_norm_bias, std::optional<DType> matrix_dtype,
             const ModelOptions& options)
    : shape_(shape), options_(options), release_{options.backend}, scratch_(allocator_for(options.backend)) {
  auto matrix = [&](const std::string& name) {
    const DType dt = matrix_dtype.value_or(params.weights().get(name).dtype);
    return Matrix{params.get(name, dt), dt, params.layout(name, dt)};
  };
  auto f32 = [&](const std::string& name) { return name.empty() ? nullptr : params.f32(name); };
  auto norm = [&](const std::string& w, const std::string& b) {
    return Norm(shape_.norm_spec(), shape_.width, params.f32(w), f32(b), options_.backend, options_.threads);
  };
  for (int64_t l = 0; l < shape_.layers; ++l) {
    const TrunkNames n = names(l);
    Layer L{};
    L.attn_norm = norm(n.attn_norm, n.attn_norm_bias);
    L.mlp_norm = norm(n.mlp_norm, n.mlp_norm_bias);
    for (auto [m, name] : kProjections) L.*m = matrix(n.*name);
    if (shape_.mlp.gated) L.gate = matrix(n.gate);
    L.q_bias = f32(n.q_bias);
    L.k_bias = f32(n.k_bias);
    L.v_bias = f32(n.v_bias);
    layers_.push_back(L);
  }
  final_norm_ = norm(final_norm, final_norm_bias);
}

kernels::MatmulParams Trunk::product(const float* x, int64_t rows, int64_t in, const Matrix& w, int64_t out,
                                     float* y, bool accumulate, const float* bias) const {
  kernels::MatmulParams p;
  p.rows = rows;
  p.in = in;
  p.out = out;
  p.x = x;
  p.x_stride = in;
  // q8_0 quantises x for products over a block type only: float weights
  // have no integer dot product to feed, and keep f32 activations.
  p.x_dtype = options_.activations == DType::q8_0 && is_element_type(w.dtype) ? DType::f32 : options_.activations;
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
  auto mm = [&](const float* in_x, int64_t in, const Matrix& w, int64_t out, float* y, bool acc) {
    kernels::matmul(b, product(in_x, n, in, w, out, y, acc, nullptr));
  };
  for (int64_t l = 0; l < shape_.layers; ++l) {
    const Layer& L = layers_[static_cast<size_t>(l)];
    L.attn_norm.run(x, n, h);
    // q, k and v read one h, and gate and up another: one call each, so the
    // backend may run them as one job.
    const kernels::MatmulParams qkv[] = {product(h, n, W, L.q, qd, q, false, L.q_bias),
                                         product(h, n, W, L.k, kd, k, false, L.k_bias),
                                         product(h, n, W, L.v, kd, v, false, L.v_bias)};
    kernels::matmul_group(b, qkv, 3);
    attend(l, q, k, v, o);
    mm(o, qd, L.o, W, x, true);
    L.mlp_norm.run(x, n, h);
    feed_forward(L, h, n, g, u);
    mm(g, F, L.down, W, x, true);
  }
}

void Trunk::feed_forward(const Layer& L, const float* h, int64_t n, float* g, float* u) {
  const Backend b = options_.backend;
  const int64_t W = shape_.width, F = shape_.mlp_width;
  const FeedForwardSpec& f = shape_.mlp;
  if (!f.gated) {  // g = act(up(h))
    kernels::matmul(b, product(h, n, W, L.up, F, g, false, nullptr));
    kernels::activate(b, {n * F, g, nullptr, f.act, options_.threads});
    return;
  }
  // gate and up read one h: one call, so the backend may run them as one job.
  const kernels::MatmulParams gate_up[] = {product(h, n, W, L.gate, F, g, false, nullptr),
                                           product(h, n, W, L.up, F, u, false, nullptr)};
  kernels::matmul_group(b, gate_up, 2);
  if (f.act == kernels::Activation::silu)
    kernels::silu_mul(b, {n * F, g, u, options_.threads});  // SwiGLU: the vectorised body every shipped family runs
  else
    kernels::activate(b, {n * F, g, u, f.act, options_.threads});
}

void Trunk::final_norm(const float* x, int64_t n, float* out) { final_norm_.run(x, n, out); }

}  // namespace mstar
