#pragma once
// One pool of worker threads for every op of the cpu backend: products,
// attention, norms and copies all run on it, and so do the engine's draws
// of each stream's next token, so nothing oversubscribes the cores
// (OpenBLAS runs single-threaded inside a pool task; OpenMP is not used for
// parallel loops). Work is handed out an item at a time from an
// atomic counter, so a thread the OS takes away (another process on the
// core) delays only the item it holds: the others take the rest. A helper
// woken onto the caller's own core (where the kernel often put it beside
// busy neighbours) moves to another before it takes part, or stays out
// where it may run on that core only. Idle workers spin briefly, then
// sleep, so a busy machine is not robbed of time.
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
