// The thread pool behind every cpu op: each item runs exactly once, on a
// worker below the thread count, however jobs follow one another; a call
// from inside a body runs inline; a helper that arrives late (its thread was
// away) never runs items of a job already finished; a helper woken onto
// the caller's processor, where it may run nowhere else, stays out.
#include <doctest/doctest.h>
#include <sched.h>

#include <atomic>
#include <chrono>
#include <filesystem>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "kernels/cpu/thread_pool.h"

using namespace mstar::kernels;

TEST_CASE("thread pool: every item once, on a worker below the thread count, job after job") {
  for (int threads : {1, 2, 3, 5})
    for (int64_t n : {0, 1, 2, 3, 17, 97, 1000}) {
      CAPTURE(threads);
      CAPTURE(n);
      for (int job = 0; job < 50; ++job) {
        std::vector<std::atomic<int>> hits(static_cast<size_t>(n));
        std::atomic<int> bad_worker{0};
        parallel_for(threads, n, [&](int64_t i, int worker) {
          hits[static_cast<size_t>(i)].fetch_add(1);
          if (worker < 0 || worker >= threads) bad_worker.fetch_add(1);
        });
        for (const auto& h : hits) REQUIRE(h.load() == 1);
        REQUIRE(bad_worker.load() == 0);
      }
    }
}

TEST_CASE("thread pool: a parallel_for inside a body runs inline on that worker") {
  std::vector<std::atomic<int>> hits(17 * 13);
  parallel_for(3, 17, [&](int64_t i, int outer) {
    parallel_for(3, 13, [&](int64_t j, int inner) {
      CHECK(inner == 0);
      (void)outer;
      hits[static_cast<size_t>(i * 13 + j)].fetch_add(1);
    });
  });
  for (const auto& h : hits) CHECK(h.load() == 1);
}

TEST_CASE("thread pool: a slow item delays only itself, the next jobs see only their own items") {
  // Worker 1 sleeps on its first item of every job, as if its core were
  // taken; the caller runs the rest. Each job writes its own number, so an
  // item run twice or by a late helper for the wrong job shows up.
  std::vector<std::atomic<int>> owner(64);
  for (int job = 1; job <= 30; ++job) {
    std::atomic<bool> slept{false};
    parallel_for(2, 64, [&](int64_t i, int worker) {
      if (worker == 1 && !slept.exchange(true)) std::this_thread::sleep_for(std::chrono::microseconds(300));
      const int before = owner[static_cast<size_t>(i)].exchange(job);
      CHECK(before == job - 1);
    });
  }
}

TEST_CASE("thread pool: a helper on the caller's processor, allowed nowhere else, stays out of the job") {
  // Every thread of the process pinned to the caller's processor: a helper
  // that wakes there could only take turns with the caller and cannot move
  // off, so the caller runs every item, even though each item sleeps
  // (leaving the processor to the helper, which would otherwise take the
  // next item).
  const int cpu = sched_getcpu();
  REQUIRE(cpu >= 0);
  cpu_set_t all;
  REQUIRE(sched_getaffinity(0, sizeof all, &all) == 0);
  parallel_for(2, 2, [](int64_t, int) {});  // the helper exists
  // A helper that woke on the caller's processor for that job may still be
  // moving off it, and would restore its own mask after the pinning below
  // (a fresh-clone CI run failed so: 431 items helped); let it settle.
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  cpu_set_t one;
  CPU_ZERO(&one);
  CPU_SET(cpu, &one);
  std::vector<pid_t> threads;
  for (const auto& task : std::filesystem::directory_iterator("/proc/self/task"))
    threads.push_back(static_cast<pid_t>(std::stoi(task.path().filename().string())));
  bool pinned = true;
  for (pid_t t : threads) pinned = sched_setaffinity(t, sizeof one, &one) == 0 && pinned;
  std::atomic<int> helped{0};
  if (pinned)
    for (int job = 0; job < 50; ++job)
      parallel_for(2, 17, [&](int64_t, int worker) {
        if (worker != 0) helped.fetch_add(1);
        std::this_thread::sleep_for(std::chrono::microseconds(50));
      });
  for (pid_t t : threads) sched_setaffinity(t, sizeof all, &all);
  REQUIRE(pinned);
  CHECK(helped.load() == 0);
}

namespace {

// A RedoJob over `n` counters: run and publish add one to item i's, so
// every counter ends at one when each item is published exactly once. The
// caller's run sleeps `run_sleep` on every item, so a helper wakes while
// items are left; with `hold`, a helper's first run_aside waits until the
// test lets it go (`go`), as if its core were taken, and notes whether it
// was let go or gave up after 10 s.
struct CountingJob : RedoJob {
  std::vector<std::atomic<int>> published;
  std::atomic<int> asides{0}, held{0}, left{0};
  std::atomic<bool> hold{false}, go{false}, gave_up{false};
  std::chrono::microseconds run_sleep{0};
  explicit CountingJob(int64_t items) : published(static_cast<size_t>(items)) {
    n = items;
    run = [](RedoJob& r, int64_t i) {
      auto& j = static_cast<CountingJob&>(r);
      std::this_thread::sleep_for(j.run_sleep);
      j.published[static_cast<size_t>(i)].fetch_add(1);
    };
    run_aside = [](RedoJob& r, int64_t) {
      auto& j = static_cast<CountingJob&>(r);
      j.asides.fetch_add(1);
      if (j.hold.load() && j.held.fetch_add(1) == 0) {
        const auto give_up = std::chrono::steady_clock::now() + std::chrono::seconds(10);
        while (!j.go.load() && std::chrono::steady_clock::now() < give_up)
          std::this_thread::sleep_for(std::chrono::milliseconds(1));
        j.gave_up.store(!j.go.load());
      }
      j.left.fetch_add(1);
    };
    publish = [](RedoJob& r, int64_t i) { static_cast<CountingJob&>(r).published[static_cast<size_t>(i)].fetch_add(1); };
  }
};

}  // namespace

TEST_CASE("thread pool: a redo job publishes every item exactly once, job after job") {
  for (int threads : {1, 2, 3})
    for (int64_t n : {0, 1, 2, 17, 97, 1000}) {
      CAPTURE(threads);
      CAPTURE(n);
      CountingJob job(n);
      for (int round = 0; round < 20; ++round) {
        job.reuse();
        for (auto& p : job.published) p.store(0);
        parallel_for_redo(threads, job);
        for (const auto& p : job.published) REQUIRE(p.load() == 1);
      }
      job.reuse();
    }
}

TEST_CASE("thread pool: a redo job's helper runs its own half upwards, then the caller's from its end downwards") {
  // One helper owns items [n / 2, n): it runs them upwards from n / 2, and
  // then, while the slow caller is still in its half, takes that half's
  // items from n / 2 - 1 downwards. Each thread reading one long run of a
  // product's panels is the point: handed out in turn, every thread read
  // every other panel.
  struct OrderJob : CountingJob {
    std::mutex m;
    std::vector<int64_t> order;  // the helper's items, in the order it ran them
    explicit OrderJob(int64_t items) : CountingJob(items) {
      run_aside = [](RedoJob& r, int64_t i) {
        auto& j = static_cast<OrderJob&>(r);
        std::lock_guard lk(j.m);
        j.order.push_back(i);
      };
    }
  };
  constexpr int64_t n = 64;
  OrderJob job(n);
  job.run_sleep = std::chrono::milliseconds(2);  // 128 ms of the caller's items: time for the helper to wake
  parallel_for_redo(2, job);
  job.reuse();
  for (const auto& p : job.published) CHECK(p.load() == 1);
  REQUIRE(!job.order.empty());  // the helper took part
  CHECK(job.order.front() == n / 2);
  size_t k = 1;
  while (k < job.order.size() && job.order[k] == job.order[k - 1] + 1) ++k;
  CHECK(job.order[k - 1] == n - 1);  // its whole half: the caller sleeps in its own
  for (int64_t want = n / 2 - 1; k < job.order.size(); ++k, --want) CHECK(job.order[k] == want);
}

TEST_CASE("thread pool: a redo job's caller runs a lost helper's item again and returns, and reuse waits for the helper") {
  // The helper's first item waits for the test, which lets it go only
  // after parallel_for_redo has returned: a caller that waited for it
  // would return only when the helper gave up, 10 s later. The helper's
  // late result is never published, and reuse() returns only once it has
  // left.
  CountingJob job(64);  // 128 ms of the caller's items: time for the helper to wake
  job.run_sleep = std::chrono::milliseconds(2);
  job.hold.store(true);
  parallel_for_redo(2, job);
  job.go.store(true);
  for (const auto& p : job.published) CHECK(p.load() == 1);
  REQUIRE(job.held.load() >= 1);  // the helper took part
  job.reuse();
  CHECK_FALSE(job.gave_up.load());
  CHECK(job.left.load() == job.asides.load());
  for (const auto& p : job.published) CHECK(p.load() == 1);
}
