#include "experiments/interrupt.h"

#include <unistd.h>

#include <csignal>

namespace stragglersim::experiments {
namespace {

std::atomic<int> g_signal{0};         // NOLINT: written by the signal handler
struct sigaction g_previous_int {};   // NOLINT
struct sigaction g_previous_term {};  // NOLINT

extern "C" void on_interrupt(int signal) {
  int expected = 0;
  if (!g_signal.compare_exchange_strong(expected, signal)) {
    // Second signal: the user wants out now (only async-signal-safe calls here).
    ::_exit(128 + expected);
  }
}

}  // namespace

const std::atomic<int>& interrupt_flag() { return g_signal; }

InterruptGuard::InterruptGuard() {
  g_signal.store(0);
  struct sigaction action {};
  action.sa_handler = on_interrupt;
  sigemptyset(&action.sa_mask);
  action.sa_flags = 0;
  sigaction(SIGINT, &action, &g_previous_int);
  sigaction(SIGTERM, &action, &g_previous_term);
}

InterruptGuard::~InterruptGuard() {
  sigaction(SIGINT, &g_previous_int, nullptr);
  sigaction(SIGTERM, &g_previous_term, nullptr);
}

}  // namespace stragglersim::experiments
