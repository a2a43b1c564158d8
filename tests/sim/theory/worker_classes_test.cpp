// Workers with equal marginals (sim/theory/worker_classes.h): the classes found, their
// representatives and sizes, and the class average computing each distinct multiset once.

#include "sim/theory/worker_classes.h"

#include <catch2/catch.hpp>
#include <utility>
#include <vector>

#include "sim/delays/heterogeneous_delay.h"

namespace stragglersim::sim {
namespace {

HeterogeneousDelay::Options classes_options(std::vector<double> factors) {
  return {.shift = 0.5, .rate = 1.0, .tail = TailScaling::kLoad, .factors = std::move(factors)};
}

}  // namespace

TEST_CASE("theory: workers with equal marginals form classes in worker order", "[sim][theory]") {
  const HeterogeneousDelay delay(std::vector<double>(6, 1.0),
                                 classes_options({1.0, 2.0, 1.0, 2.0, 3.0, 1.0}));
  const WorkerClasses c = worker_classes(delay, true);
  CHECK(c.count() == 3);
  CHECK(c.class_of == std::vector<int>{0, 1, 0, 1, 2, 0});
  CHECK(c.representative == std::vector<int>{0, 1, 4});
  CHECK(c.size == std::vector<int>{3, 2, 1});
  CHECK(worker_classes(delay, false).count() == 6);
  CHECK(same_marginal(delay, 0, 5));
  CHECK_FALSE(same_marginal(delay, 0, 1));
  CHECK_FALSE(identical_workers(delay));
  const HeterogeneousDelay same(std::vector<double>(3, 1.0), classes_options({1.5, 1.5, 1.5}));
  CHECK(identical_workers(same));

  // Groups {0,1}, {2,3}, {4,5}: class multisets {0,1}, {0,1}, {0,2}, so two integrals.
  const std::vector<std::vector<int>> sets = {{0, 1}, {2, 3}, {4, 5}};
  CHECK(distinct_class_sets(sets, c) == 2);
  CHECK(class_multiset({4, 5}, c) == std::vector<int>{0, 2});
  int calls = 0;
  const double average = class_average(sets, c, [&](const std::vector<int>& members) {
    ++calls;
    return static_cast<double>(members.front());  // the first set of each multiset: 0, then 4
  });
  CHECK(calls == 2);
  CHECK(average == Approx((0.0 + 0.0 + 4.0) / 3.0));
}

}  // namespace stragglersim::sim
