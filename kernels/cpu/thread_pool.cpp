#include "kernels/cpu/thread_pool.h"

#include <sched.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <mutex>
#include <thread>
#include <vector>

#include "core/errors.h"

namespace mstar::kernels {

namespace {

// How long an idle worker polls for the next job before sleeping, and the
// caller for its helpers before yielding. A decode step launches a few
// hundred small jobs back to back, a few microseconds apart; waking from a
// futex costs tens of microseconds, so workers poll across those gaps,
// holding their cores; longer than this and they would hold them from other
// processes between steps.
constexpr auto kSpin = std::chrono::microseconds(200);

// One poll of that wait: a hint to the core, not sched_yield. A yield hands
// the core to any runnable process, even one at nice 19, and the worker
// need not get it back before the caller has done the job alone. Beside
// two fuzzers at nice 19 (Zen 4, bf16 weights and activations, 3 alternated
// rounds; docs/bench/cpu/s19-pool-pause.md) the helper did a fifth of a
// 16-row 4864 -> 896 product's tiles, and 2 threads took 804-1,074 us
// against 849-1,053 for one; polling with pause, half the tiles and 585-672
// us, and the Qwen2.5-0.5B-shaped 16-stream step went from 112-135 to
// 106-114 ms. On the idle machine the two polls measured alike; beside
// busy-looping neighbours neither kept a 0.4 ms product on 2 threads from
// being slower than on 1 in some rounds (`mstar-bench matmul --rows 1
// --neighbours 2`); a helper's move off the caller's core (below) answered that.
inline void relax() {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#elif defined(__aarch64__)
  asm volatile("yield");
#endif
}

// Polls with relax() while busy() holds, for up to kSpin; true when it
// stopped holding, false when the time ran out first.
template <class Busy>
bool poll(Busy busy) {
  const auto until = std::chrono::steady_clock::now() + kSpin;
  while (busy())
    if (std::chrono::steady_clock::now() >= until)
      return false;
    else
      relax();
  return true;
}

// Waits while busy() holds: polls for up to kSpin, then yields. Past kSpin
// the thread being waited for has lost its core; spinning on would hold
// this one through another process's time slice.
template <class Busy>
void await(Busy busy) {
  if (!poll(busy))
    while (busy()) std::this_thread::yield();
}

// The processor this thread runs on now, -1 where that cannot be told.
// Cheap enough to ask once a job: glibc answers from the vDSO or the rseq
// area, without a system call.
inline int current_cpu() {
#if defined(__linux__)
  return sched_getcpu();
#else
  return -1;
#endif
}

// Moves this thread off processor `cpu` and leaves it free to come back
// later: it is barred from `cpu` for a moment, which makes the kernel
// migrate it, and then allowed there again. False when it may run nowhere
// else (the process is pinned to that one processor). The mask is put back
// only if it is still the one set here: an affinity someone else gave the
// thread in between (taskset on the running process) is theirs to keep.
// The window left is between that read and the write after it.
inline bool move_off(int cpu) {
#if defined(__linux__)
  cpu_set_t allowed;
  if (sched_getaffinity(0, sizeof allowed, &allowed) != 0) return false;
  cpu_set_t others = allowed;
  CPU_CLR(cpu, &others);
  if (CPU_COUNT(&others) == 0 || sched_setaffinity(0, sizeof others, &others) != 0) return false;
  cpu_set_t now;
  if (sched_getaffinity(0, sizeof now, &now) == 0 && CPU_EQUAL(&now, &others))
    sched_setaffinity(0, sizeof allowed, &allowed);
  return true;
#else
  (void)cpu;
  return false;
#endif
}

// A RedoJob item's state.
enum : uint8_t { kFree, kMine, kAside, kPublishing, kDone };
// In a job word, beside the helper count: the job is a RedoJob.
constexpr uint64_t kRedoBit = uint64_t{1} << 15;

// Claims the items of part q one at a time with take(i) (false: another
// thread holds item i), as its owner does (up from its begin) or as the
// others do (down from its end), until take fails or the part runs out.
// The owner's claims and the others' meet there: an item fetched from both
// ends goes to one of them and the other stops, so none is skipped. Returns
// the items taken.
template <class Take>
int64_t claim(RedoJob::Part& q, bool owner, Take&& take) {
  int64_t taken = 0;
  for (;;) {
    const int64_t i =
        owner ? q.up.fetch_add(1, std::memory_order_relaxed) : q.down.fetch_sub(1, std::memory_order_relaxed) - 1;
    if (i < q.begin || i >= q.end || !take(i)) return taken;
    ++taken;
  }
}

// A thread's items: its own part (own < j.parts) upwards, then what is left
// of the others, from the next part on.
template <class Take>
int64_t claim_all(RedoJob& j, int own, Take&& take) {
  const bool owns = own < j.parts;
  int64_t taken = owns ? claim(j.part[own], true, take) : 0;
  for (int s = owns ? 1 : 0; s < j.parts; ++s) taken += claim(j.part[(own + s) % j.parts], false, take);
  return taken;
}

class Pool {
 public:
  void run_redo(int threads, RedoJob& j) {
    MSTAR_ASSERT(j.n >= 0 && j.n <= RedoJob::kMaxItems && j.stamp.load() == 0 && j.inside.load() == 0,
                 "parallel_for_redo: at most kMaxItems items, a record not in a job and left by its helpers "
                 "(reuse())");
    if (threads <= 1 || j.n <= 1 || in_job_) {
      for (int64_t i = 0; i < j.n; ++i) j.run(j, i);
      return;
    }
    std::lock_guard one_job(job_mutex_);
    grow(threads - 1);
    for (int64_t i = 0; i < j.n; ++i) j.state[i].store(kFree, std::memory_order_relaxed);
    const int helpers = static_cast<int>(std::min<int64_t>(threads - 1, j.n - 1));
    j.parts = std::min(helpers + 1, RedoJob::kMaxParts);
    for (int q = 0; q < j.parts; ++q) {
      RedoJob::Part& part = j.part[q];
      part.begin = j.n * q / j.parts;
      part.end = j.n * (q + 1) / j.parts;
      part.up.store(part.begin, std::memory_order_relaxed);
      part.down.store(part.end, std::memory_order_relaxed);
    }
    j.owners.store(0, std::memory_order_relaxed);
    caller_cpu_.store(current_cpu(), std::memory_order_relaxed);
    {
      std::lock_guard lk(m_);
      job_ = ((job_ >> 16) + 1) << 16 | kRedoBit | static_cast<uint64_t>(helpers);
      j.stamp.store(job_);  // before the job is seen: a helper checks it once inside
      redo_.store(&j, std::memory_order_release);
      generation_.store(job_, std::memory_order_release);
    }
    cv_.notify_all();
    in_job_ = true;
    auto take = [&](int64_t i, uint8_t from) {
      if (!j.state[i].compare_exchange_strong(from, kMine, std::memory_order_acq_rel)) return false;
      j.run(j, i);
      j.state[i].store(kDone, std::memory_order_release);
      return true;
    };
    const auto start = std::chrono::steady_clock::now();
    const int64_t mine = claim_all(j, 0, [&](int64_t i) { return take(i, kFree); });
    // Every item is taken. Those the helpers hold take an item's time unless
    // a helper has lost its core; past twice the caller's own time per item
    // (kRedoAfter at least) the caller runs them itself rather than wait
    // out another process's time slice, milliseconds. A fixed 20 us ran
    // again, with nothing else running, items that take longer (a panel
    // of 4864 -> 896 reads 622 KB). An item being published is a copy,
    // microseconds: poll for it, and past kSpin (its helper lost its core
    // inside the copy) yield, as run() does, rather than spin through
    // another process's time slice.
    const auto now = std::chrono::steady_clock::now();
    const auto until = now + std::max<std::chrono::steady_clock::duration>(
                                 kRedoAfter, mine > 0 ? 2 * (now - start) / mine : kRedoAfter);
    for (int64_t i = 0; i < j.n; ++i)
      for (;;) {
        const uint8_t st = j.state[i].load(std::memory_order_acquire);
        if (st == kDone) break;
        if (st == kPublishing) {
          await([&] { return j.state[i].load(std::memory_order_acquire) == kPublishing; });
          continue;
        }
        if (std::chrono::steady_clock::now() < until) {
          relax();
          continue;
        }
        if (take(i, st)) break;  // kFree (fetched, not yet claimed) or kAside
      }
    in_job_ = false;
    // No helper enters it any more: one that read the pointer before it
    // was cleared is counted inside it once entering_ is zero (nanoseconds
    // from the read, unless it loses its core in between: then yield), and
    // the record's owner waits for it in reuse().
    redo_.store(nullptr);
    await([&] { return entering_.load() != 0; });
    j.stamp.store(0);
  }

  static Pool& get() {
    static Pool p;
    return p;
  }

  void run(int threads, int64_t n, void* ctx, void (*body)(void*, int64_t, int)) {
    if (threads <= 1 || n <= 1 || in_job_) {
      for (int64_t i = 0; i < n; ++i) body(ctx, i, 0);
      return;
    }
    std::lock_guard one_job(job_mutex_);  // one parallel_for at a time
    grow(threads - 1);
    ctx_ = ctx;
    body_ = body;
    n_ = n;
    next_.store(0, std::memory_order_relaxed);
    const int helpers = static_cast<int>(std::min<int64_t>(threads - 1, n - 1));
    caller_cpu_.store(current_cpu(), std::memory_order_relaxed);  // published with the job
    {
      // A job's number and its helper count travel in one word, so a worker
      // never pairs one job's number with another's count.
      std::lock_guard lk(m_);
      job_ = ((job_ >> 16) + 1) << 16 | static_cast<uint64_t>(helpers);
      gate_.store(gate_of(job_), std::memory_order_relaxed);  // open, nobody in
      generation_.store(job_, std::memory_order_release);
    }
    cv_.notify_all();
    in_job_ = true;
    work(0);
    in_job_ = false;
    // Every item is taken. Close the job so a helper that wakes only now
    // (its core was lent to another process) stays out, and wait only for
    // those inside: waiting for every helper to check in made two threads
    // slower than one whenever a neighbour held the other core.
    gate_.fetch_or(kClosed, std::memory_order_acq_rel);
    // Those inside are finishing an item, microseconds: poll for them as the
    // workers poll for jobs. This wait used to yield at once, and a yield
    // beside any runnable process (a fuzzer at nice 19, a busy neighbour)
    // can lend the caller's core for a whole time slice, milliseconds, at
    // the end of every product. Beside two niced fuzzers (Zen 4, 3
    // alternated rounds of `mstar-bench checkpoint` and `matmul`) the
    // Qwen2.5-0.5B-shaped one-stream step went from 44.6-51.9 to 31.7-34.5
    // ms with the poll, and with two busy neighbours added a one-row 896 ->
    // 4864 product on 2 threads went from 307-430 us (1 thread: 361-391)
    // to 209-358 (1 thread: 350-385). Beside the busy neighbours alone, 2
    // threads stayed slower than 1 with either wait: a helper that loses
    // its core inside an item holds the caller for the neighbour's slice.
    // Past kSpin a helper has lost its core; then yield rather than hold
    // this one.
    await([&] { return (gate_.load(std::memory_order_acquire) & kInside) != 0; });
  }

 private:
  ~Pool() {
    {
      std::lock_guard lk(m_);
      stop_.store(true, std::memory_order_release);
      job_ += 1 << 16;
      generation_.store(job_, std::memory_order_release);
    }
    cv_.notify_all();
    for (auto& t : workers_) t.join();
  }

  void grow(int helpers) {
    while (static_cast<int>(workers_.size()) < helpers) {
      const int index = static_cast<int>(workers_.size()) + 1;
      // The worker starts from the current job number, read here before the
      // next job is published: read on the new thread, it could already be
      // that job's, and the worker would sleep through it.
      const uint64_t seen = generation_.load(std::memory_order_acquire);
      workers_.emplace_back([this, index, seen] { loop(index, seen); });
    }
  }

  void work(int worker) {
    for (int64_t i; (i = next_.fetch_add(1, std::memory_order_relaxed)) < n_;) body_(ctx_, i, worker);
  }

  void loop(int index, uint64_t seen) {
    bool nap = false;  // sleep at once, without polling
    for (;;) {
      // Poll for a new job, then sleep until one comes.
      if (nap || !poll([&] { return generation_.load(std::memory_order_acquire) == seen; })) {
        std::unique_lock lk(m_);
        cv_.wait(lk, [&] { return generation_.load(std::memory_order_acquire) != seen; });
      }
      nap = false;
      seen = generation_.load(std::memory_order_acquire);
      if (stop_.load(std::memory_order_acquire)) return;
      // Only the job's first helpers take part, and only while it is open.
      if (static_cast<uint64_t>(index) > (seen & (kRedoBit - 1))) continue;
      // A helper woken onto the caller's core could only take turns with
      // the caller: its items cost the caller as much as doing them, and
      // the caller's poll for it holds the core it needs. It moves to
      // another core and takes part there; where it may run nowhere else,
      // it stays out and sleeps. Beside two busy-looping neighbours on 2
      // cores, a scratch count found the helper on the caller's core in
      // 1,913 of the 1,943 jobs it entered in one run of a one-row 896 ->
      // 4864 bf16 product (median 370 us; one thread about 360); with the
      // move, 3 to 10 times in 3,587 to 3,825 jobs, and in 4 alternated
      // rounds 2 threads took 208-295 us against 312-369 on one, where
      // before they took 266-387 (`mstar-bench matmul --rows 1 --cache
      // cold --neighbours 2`). With nothing else running it came once in the 39,169
      // jobs of a decode run.
      const int cpu = current_cpu();
      if (cpu >= 0 && cpu == caller_cpu_.load(std::memory_order_relaxed) && !move_off(cpu)) {
        nap = true;
        continue;
      }
      if (seen & kRedoBit) {
        redo(seen);
        continue;
      }
      if (enter(gate_of(seen))) {
        in_job_ = true;
        work(index);
        in_job_ = false;
        gate_.fetch_sub(1, std::memory_order_release);
      }
    }
  }

  // A helper's part in a RedoJob: it enters only the job it was woken for,
  // while the caller is still in it; inside, the record cannot be reused.
  // All in sequential consistency: the caller's clearing of redo_ and
  // reading of entering_ against the helper's counting and reading.
  void redo(uint64_t seen) {
    entering_.fetch_add(1);
    RedoJob* const job = redo_.load();
    if (job) job->inside.fetch_add(1);
    entering_.fetch_sub(1);
    if (!job) return;
    RedoJob& j = *job;
    if (j.stamp.load() == seen) {
      in_job_ = true;
      claim_all(j, j.owners.fetch_add(1, std::memory_order_relaxed) + 1, [&](int64_t i) {
        uint8_t st = kFree;
        if (!j.state[i].compare_exchange_strong(st, kAside, std::memory_order_acq_rel)) return false;
        j.run_aside(j, i);
        st = kAside;
        if (j.state[i].compare_exchange_strong(st, kPublishing, std::memory_order_acq_rel)) {
          j.publish(j, i);
          j.state[i].store(kDone, std::memory_order_release);
        }
        return true;
      });
      in_job_ = false;
    }
    j.inside.fetch_sub(1, std::memory_order_release);
  }

  // The gate of a job: its number (above bit 32), closed (bit 31), the
  // helpers inside (below). A helper enters only the job it was woken for,
  // before the caller closes it.
  static constexpr uint64_t kClosed = uint64_t{1} << 31;
  static constexpr uint64_t kInside = kClosed - 1;
  static uint64_t gate_of(uint64_t generation) { return (generation >> 16) << 32; }

  bool enter(uint64_t job) {
    uint64_t g = gate_.load(std::memory_order_acquire);
    while ((g & ~kInside) == job)  // this job, still open
      if (gate_.compare_exchange_weak(g, g + 1, std::memory_order_acq_rel)) return true;
    return false;
  }

  std::mutex job_mutex_;
  std::mutex m_;
  std::condition_variable cv_;
  std::vector<std::thread> workers_;
  std::atomic<uint64_t> generation_{0};  // job number << 16 | its helper count
  uint64_t job_ = 0;                      // the last value stored there (under m_)
  std::atomic<int64_t> next_{0};
  std::atomic<uint64_t> gate_{0};
  int64_t n_ = 0;
  void* ctx_ = nullptr;
  void (*body_)(void*, int64_t, int) = nullptr;
  std::atomic<bool> stop_{false};
  std::atomic<int> caller_cpu_{-1};  // where the job's caller ran when it published the job
  std::atomic<RedoJob*> redo_{nullptr};  // the RedoJob being run, else null
  std::atomic<int> entering_{0};         // helpers between reading redo_ and entering it
  static thread_local bool in_job_;
};

thread_local bool Pool::in_job_ = false;

}  // namespace

void RedoJob::reuse() {
  MSTAR_ASSERT(stamp.load() == 0, "RedoJob::reuse: the record is in a job");
  while (inside.load() != 0) std::this_thread::yield();
}

void parallel_for_redo(int threads, RedoJob& job) {
  MSTAR_ASSERT(threads >= 1, "parallel_for_redo: at least one thread");
  Pool::get().run_redo(threads, job);
}

void parallel_for_raw(int threads, int64_t n, void* ctx, void (*body)(void*, int64_t, int)) {
  MSTAR_ASSERT(threads >= 1, "parallel_for: at least one thread");
  Pool::get().run(threads, n, ctx, body);
}

}  // namespace mstar::kernels
