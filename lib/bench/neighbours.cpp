#include "bench/neighbours.h"

#include <fmt/format.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "core/errors.h"

namespace mstar::bench {

Neighbours::Neighbours(int count) {
  for (int i = 0; i < count; ++i) {
    const pid_t pid = fork();
    if (pid < 0) {
      const int err = errno;
      stop();
      throw InputError(fmt::format("--neighbours {}: cannot start process {}: {}", count, i + 1, std::strerror(err)));
    }
    if (pid == 0) {
      // The child of a process with threads may only call async-signal-safe
      // functions; it calls none, it spins until it is killed.
      volatile unsigned long spin = 0;
      for (;;) spin = spin + 1;
    }
    pids_.push_back(pid);
  }
}

Neighbours::~Neighbours() { stop(); }

void Neighbours::stop() {
  for (pid_t pid : pids_) kill(pid, SIGKILL);
  for (pid_t pid : pids_) waitpid(pid, nullptr, 0);
  pids_.clear();
}

}  // namespace mstar::bench
