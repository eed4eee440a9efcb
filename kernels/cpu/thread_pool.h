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
// where it may run on that core only. A RedoJob's caller does not wait for
// a helper that lost its core inside an item: it runs the item again.
// Idle workers spin briefly, then sleep, so a busy machine is not robbed of
// time.
#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>
#include <type_traits>

#include "kernels/parallel.h"

namespace mstar::kernels {

// parallel_for (kernels/parallel.h) runs on this pool.

// A job whose items a helper that loses its core inside one may leave
// behind. Beside a busy neighbour the caller of an ordinary job waits at its
// end for such a helper for the rest of the neighbour's time slice,
// milliseconds; here, once every item is taken, the caller waits for the
// items its helpers still hold at most twice its own time per item (and
// kRedoAfter at least), then runs them itself.
// So an item may be run twice, and is published once: the caller runs its
// items straight into the output (run); a helper runs an item into storage
// of its own (run_aside) and publishes it (publish) only if the caller has
// not taken it meanwhile. A helper may still be inside run_aside after the
// call has returned: everything run_aside reads must outlive the call (the
// record itself, and what its owner keeps valid until the record's
// `inside` is zero), and publish is never called after the call returns.
// The record's owner reuses it only through reuse(), which waits for the
// helpers to leave it.
// The items are cut into one contiguous part per thread (the caller's
// first): each thread runs its own part upwards, then takes what is left of
// the others from their ends downwards, so a thread that finishes early
// still balances the job. Items are a product's panels, and a core reads
// memory faster from one long run of them than from every other panel, as
// a shared counter handed them out: on Zen 4 the Qwen2.5-0.5B-shaped
// one-stream step's median went from 24.54 to 22.82 ms in the steps whose
// read (measured just before) was 45 GB/s or more, and from 30.93 to 30.53
// at 35 to 40 (20 alternated rounds of `mstar-bench checkpoint --roofline
// 20`, grouped by tools/bench/roofline_bands.py).
struct RedoJob {
  static constexpr int kMaxItems = 1 << 14;
  static constexpr int kMaxParts = 64;  // threads past that only take the others' leftovers
  void (*run)(RedoJob& job, int64_t i) = nullptr;
  void (*run_aside)(RedoJob& job, int64_t i) = nullptr;  // on the helper's thread
  void (*publish)(RedoJob& job, int64_t i) = nullptr;    // on the same thread, right after
  int64_t n = 0;                                          // items, <= kMaxItems
  // The pool's bookkeeping.
  struct alignas(64) Part {
    int64_t begin = 0, end = 0;      // items [begin, end)
    std::atomic<int64_t> up{0};      // the owner's next item
    std::atomic<int64_t> down{0};    // one past the others' next item
  };
  std::atomic<uint64_t> stamp{0};  // the job number while it may be entered, else 0
  std::atomic<int> inside{0};      // helpers in it
  std::atomic<int> owners{0};      // helpers that took a part (the caller owns part 0)
  int parts = 0;
  std::unique_ptr<Part[]> part{new Part[kMaxParts]};
  std::unique_ptr<std::atomic<uint8_t>[]> state{new std::atomic<uint8_t>[kMaxItems]};
  // Waits until no helper is inside and none can enter; then the owner may
  // change the record and what run_aside reads.
  void reuse();
};
constexpr auto kRedoAfter = std::chrono::microseconds(20);

// Runs every item of `job` once into the output on up to `threads` threads
// (RedoJob says how). Returns when every item is published.
void parallel_for_redo(int threads, RedoJob& job);

}  // namespace mstar::kernels
