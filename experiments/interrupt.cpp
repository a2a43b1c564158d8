#include "experiments/interrupt.h"

#include <unistd.h>

#include <csignal>

#include "models/base/stop_request.h"

namespace stragglersim::experiments {
namespace {

struct sigaction g_previous_int {};   // NOLINT
struct sigaction g_previous_term {};  // NOLINT

extern "C" void on_interrupt(int signal) {
  int expected = 0;
  if (!models::stop_signal().compare_exchange_strong(expected, signal)) {
    // Second signal: the user wants out now (only async-signal-safe calls here).
    ::_exit(128 + expected);
  }
}

}  // namespace

const std::atomic<int>& interrupt_flag() { return models::stop_signal(); }

InterruptGuard::InterruptGuard() {
  models::stop_signal().store(0);
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
