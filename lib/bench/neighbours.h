#pragma once
// Busy neighbours: processes that only spin, started for the length of a
// measurement, so a figure shows what a shared machine leaves to mstar (the
// thread pool's claim: with another process on the cores, N threads are
// never slower than one).
#include <sys/types.h>

#include <vector>

namespace mstar::bench {

class Neighbours {
 public:
  // Starts `count` spinning processes (0: none). Throws InputError when the
  // system refuses a process.
  explicit Neighbours(int count);
  ~Neighbours();  // stops and reaps them
  Neighbours(const Neighbours&) = delete;
  Neighbours& operator=(const Neighbours&) = delete;

 private:
  void stop();
  std::vector<pid_t> pids_;
};

}  // namespace mstar::bench
