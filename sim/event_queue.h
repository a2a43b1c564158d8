#pragma once
// The simulated clock's event queue: events ordered by (time, insertion sequence), so equal
// times replay in the order they were scheduled, identically on every run.

#include <cstdint>
#include <queue>
#include <variant>
#include <vector>

namespace stragglersim::sim {

/// Worker `worker` delivers its message for the current iteration.
struct ArrivalEvent {
  int worker = 0;
  /// The asynchronous clock's computation count of the worker when it started the work this
  /// event ends (a computation abandoned since is recognised by a count that moved on).
  std::uint64_t computation = 0;
};
/// The stopping rule's deadline expires.
struct DeadlineEvent {};
/// Worker `worker` ends a computation; its message enters the network (asynchronous clock).
struct ComputeEndEvent {
  int worker = 0;
  std::uint64_t computation = 0;  ///< as ArrivalEvent::computation
};
/// Worker `worker` abandons its attempt `computation` at its cut-off (MindFlayer).
struct AbandonEvent {
  int worker = 0;
  std::uint64_t computation = 0;
};

/// Message `message` of the iteration (multi-message: one per finished partition) arrives.
struct MessageEvent {
  int message = 0;
};

using EventPayload =
    std::variant<ArrivalEvent, DeadlineEvent, ComputeEndEvent, MessageEvent, AbandonEvent>;

struct Event {
  double time = 0.0;
  std::uint64_t sequence = 0;
  EventPayload payload;
};

class EventQueue {
 public:
  /// Schedules `payload` at `time` (simulated seconds).
  void push(double time, EventPayload payload);
  /// Removes and returns the earliest event. Illegal on an empty queue.
  Event pop();
  [[nodiscard]] bool empty() const { return heap_.empty(); }
  /// The earliest event's time. Illegal on an empty queue.
  [[nodiscard]] double next_time() const { return heap_.front().time; }
  [[nodiscard]] std::size_t size() const { return heap_.size(); }
  /// Drops every event; the sequence counter keeps running.
  void clear();
  /// Pre-allocates room for `events` events.
  void reserve(std::size_t events);

 private:
  struct Later {
    bool operator()(const Event& a, const Event& b) const {
      return a.time != b.time ? a.time > b.time : a.sequence > b.sequence;
    }
  };
  std::vector<Event> heap_;
  std::uint64_t next_sequence_ = 0;
};

}  // namespace stragglersim::sim
