#pragma once
// What a model asks of the KV resource serving one of its attention layers,
// in one vocabulary whichever resource it is (bounded KV, ring KV, or one
// registered later): a pass of the planned step, in which the step's own
// keys and values are kept as the resource keeps them and every row's
// queries attend over what the row may see. Models reach it through
// ResourceSet::attention(layer) and never name a resource's type.
#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>

#include "core/buffer.h"
#include "kernels/bounded_kv.h"

namespace mstar {

struct LayerPass {
  ConstTensorView q;                  // [total_q, Hq, D] f32: the step's queries, rotated by the model
  std::span<const int32_t> q_indptr;  // [rows + 1] host memory: row r's queries; empty where rows are frames
  ConstTensorView k;                  // [total_kv, H, D] f32: the step's keys
  ConstTensorView v;                  // [total_kv, H, D] f32: the step's values
  TensorView out;                     // [total_q, Hq, D] f32
  kernels::StepMask mask = kernels::StepMask::full;  // among the step's own entries
  // Keys stored unrotated and rotated on read by their place in the row's
  // visible sequence (cache positions); empty: the model rotated them.
  std::span<const float> rope_inv_freq;  // [head_dim / 2], backend memory
  std::optional<float> scale;            // the softmax scale; default 1/sqrt(head_dim)
  // Whether this pass's entries are the ones the step commits. A ring keeps
  // a frame's entries in its ring slot only from a pass that says so (its
  // denoising passes say false: what they wrote stays in the scratch frame);
  // a bounded resource stages every pass's entries in its scratch and
  // commits the last pass's at the step's commit, whatever it says.
  bool commit = true;
};

class AttentionMemory {
 public:
  virtual ~AttentionMemory() = default;
  // One pass of the staged step at `layer` (the resource's own index for
  // the model layer). Throws InputError on shapes the plan does not match.
  virtual void attend(int64_t layer, const LayerPass& pass) = 0;
  // How many entries row r of the staged step sees before its own, the same
  // at every layer the resource serves: where its queries sit in cache
  // positions; 0 for a padding row. InputError from a resource whose keys
  // carry stream positions only.
  virtual int64_t seen_before(std::size_t row) const = 0;

  // Sources: read-only prefixes (a voice's prompt) every request naming one
  // reads in place. A resource that holds none refuses them (InputError).
  virtual bool holds_sources() const { return false; }
  virtual void register_source(int id, int64_t len);
  // Writes the pass's keys and values as source `id`'s entries of `layer`
  // and batch row `row`, attending causally over them.
  virtual void prefill_source(int id, int64_t layer, int64_t row, const LayerPass& pass);
  virtual void remove_source(int id);
};

}  // namespace mstar
