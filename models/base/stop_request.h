#pragma once
// A request to abandon the set-up of a run (data generation or loading, f*, the predictions)
// because SIGINT or SIGTERM arrived. experiments/interrupt.cpp records the signal here; the
// set-up loops call throw_if_stop_requested every few thousand rows or every solver iteration.
// The check only throws while a StopScope lives (the set-up of `run`), so a signal that arrives
// during the iterations ends them the usual way (after the current row) and the summary's own
// predictions still complete.

#include <atomic>
#include <cstdint>
#include <exception>

namespace stragglersim::models {

/// Thrown by throw_if_stop_requested: the caller writes nothing and exits 128 + signal.
class StopRequested : public std::exception {
 public:
  explicit StopRequested(int signal) : signal_(signal) {}
  [[nodiscard]] int signal() const { return signal_; }
  [[nodiscard]] const char* what() const noexcept override { return "interrupted by a signal"; }

 private:
  int signal_;
};

/// The first signal received while an interrupt guard lived (0: none). Async-signal-safe.
inline std::atomic<int>& stop_signal() {
  static std::atomic<int> signal{0};
  return signal;
}

/// How many StopScopes are alive (the check throws only when at least one is).
inline std::atomic<int>& stop_scopes() {
  static std::atomic<int> scopes{0};
  return scopes;
}

/// Arms throw_if_stop_requested for its lifetime (nests).
class StopScope {
 public:
  StopScope() { stop_scopes().fetch_add(1); }
  ~StopScope() { stop_scopes().fetch_sub(1); }
  StopScope(const StopScope&) = delete;
  StopScope& operator=(const StopScope&) = delete;
  StopScope(StopScope&&) = delete;
  StopScope& operator=(StopScope&&) = delete;
};

/// Throws StopRequested when a signal was recorded and a StopScope lives: two relaxed atomic
/// loads, cheap enough for every few thousand rows.
inline void throw_if_stop_requested() {
  const int signal = stop_signal().load(std::memory_order_relaxed);
  if (signal != 0 && stop_scopes().load(std::memory_order_relaxed) > 0) {
    throw StopRequested(signal);
  }
}

/// throw_if_stop_requested on every 4096th value of a loop counter (rows, lines).
inline void poll_stop_request(std::int64_t counter) {
  if ((counter & 4095) == 0) {
    throw_if_stop_requested();
  }
}

}  // namespace stragglersim::models
