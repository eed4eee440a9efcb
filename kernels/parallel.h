#pragma once
// Host work spread over the process's worker threads, for layers above the
// kernels that have host work of their own (the engine's draw of each
// stream's next token). It runs on the same pool as the cpu backend's ops
// (cpu/thread_pool.h), so host work and ops never oversubscribe the cores,
// whichever backend runs the ops.
#include <cstdint>
#include <type_traits>

namespace mstar::kernels {

// Runs body(ctx, i, worker) for every i in [0, n) on up to `threads`
// threads (the caller is worker 0; worker < threads). Returns when all are
// done. One parallel_for at a time: calls from inside a body run inline.
void parallel_for_raw(int threads, int64_t n, void* ctx, void (*body)(void*, int64_t, int));

template <class F>
void parallel_for(int threads, int64_t n, F&& f) {
  using Fn = std::remove_reference_t<F>;
  parallel_for_raw(threads, n, const_cast<void*>(static_cast<const void*>(&f)), [](void* c, int64_t i, int w) {
    (*static_cast<Fn*>(c))(i, w);
  });
}

}  // namespace mstar::kernels
