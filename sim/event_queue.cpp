#include "sim/event_queue.h"

#include <algorithm>

#include "models/base/invariant.h"

namespace stragglersim::sim {

void EventQueue::push(double time, EventPayload payload) {
  heap_.push_back(Event{time, next_sequence_++, payload});
  std::push_heap(heap_.begin(), heap_.end(), Later{});
}

Event EventQueue::pop() {
  STRAGGLERSIM_ASSERT(!heap_.empty(), "pop from an empty event queue");
  std::pop_heap(heap_.begin(), heap_.end(), Later{});
  Event e = heap_.back();
  heap_.pop_back();
  return e;
}

void EventQueue::clear() { heap_.clear(); }

void EventQueue::reserve(std::size_t events) { heap_.reserve(events); }

}  // namespace stragglersim::sim
