#include "sim/event_queue.h"

#include <catch2/catch.hpp>
#include <vector>

namespace stragglersim::sim {

TEST_CASE("sim: event queue pops by time and then by insertion order", "[sim][event_queue]") {
  EventQueue q;
  q.push(2.0, ArrivalEvent{0});
  q.push(1.0, ArrivalEvent{1});
  q.push(1.0, DeadlineEvent{});
  q.push(1.0, ArrivalEvent{2});
  q.push(0.5, ArrivalEvent{3});
  std::vector<int> order;
  std::vector<double> times;
  while (!q.empty()) {
    const Event e = q.pop();
    times.push_back(e.time);
    if (const auto* a = std::get_if<ArrivalEvent>(&e.payload)) {
      order.push_back(a->worker);
    } else {
      order.push_back(-1);
    }
  }
  CHECK(order == std::vector<int>{3, 1, -1, 2, 0});
  CHECK(times == std::vector<double>{0.5, 1.0, 1.0, 1.0, 2.0});
}

TEST_CASE("sim: event queue sequence keeps running across clear", "[sim][event_queue]") {
  EventQueue q;
  q.push(1.0, ArrivalEvent{7});
  q.clear();
  CHECK(q.empty());
  q.push(3.0, ArrivalEvent{1});
  q.push(3.0, ArrivalEvent{0});
  CHECK(std::get<ArrivalEvent>(q.pop().payload).worker == 1);
  CHECK(std::get<ArrivalEvent>(q.pop().payload).worker == 0);
  CHECK_THROWS_AS(q.pop(), std::logic_error);
}

}  // namespace stragglersim::sim
