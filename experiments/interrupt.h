#pragma once
// SIGINT / SIGTERM for long commands. While an InterruptGuard lives, the first signal only
// records itself (the command finishes its current iteration, writes what it has and exits
// with 128 + signal: 130 for SIGINT, 143 for SIGTERM); a second signal ends the process at once
// with the same status. The previous handlers are restored when the guard ends.

#include <atomic>

namespace stragglersim::experiments {

/// The first signal received while a guard lived (0: none). Async-signal-safe to read.
const std::atomic<int>& interrupt_flag();

class InterruptGuard {
 public:
  InterruptGuard();
  ~InterruptGuard();
  InterruptGuard(const InterruptGuard&) = delete;
  InterruptGuard& operator=(const InterruptGuard&) = delete;
  InterruptGuard(InterruptGuard&&) = delete;
  InterruptGuard& operator=(InterruptGuard&&) = delete;
};

}  // namespace stragglersim::experiments
