#pragma once
// Timing one call repeatedly, the way every mstar-bench figure is taken.
#include <algorithm>
#include <chrono>
#include <vector>

#include "kernels/backend.h"

namespace mstar::bench {

// Call times in microseconds, sorted. Warm-up runs the call for at least
// 0.2 s first: on this class of machine the first milliseconds after a pause
// run several times slower (threads waking, clocks ramping), which a single
// warm-up call does not absorb. prepare(i) runs untimed before call(i): host
// bookkeeping a step does once, not the op being measured.
template <class Prepare, class Call>
std::vector<double> time_calls(Backend backend, Prepare&& prepare, Call&& call, int repeats) {
  using Clock = std::chrono::steady_clock;
  const auto warm = Clock::now();
  for (int i = 0; i < 1000 && (i == 0 || Clock::now() - warm < std::chrono::milliseconds(200)); ++i) {
    prepare(i);
    call(i);
    synchronize(backend);
  }
  std::vector<double> us;
  for (int i = 0; i < repeats; ++i) {
    prepare(i + 1);
    synchronize(backend);
    const auto t0 = Clock::now();
    call(i + 1);
    synchronize(backend);
    us.push_back(std::chrono::duration<double, std::micro>(Clock::now() - t0).count());
  }
  std::sort(us.begin(), us.end());
  return us;
}

}  // namespace mstar::bench
