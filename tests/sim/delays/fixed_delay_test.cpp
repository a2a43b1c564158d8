// The fixed computation model (sim/delays/fixed_delay.h): exact draws τ_i·ℓ_i, the formulas, the
// point-mass marginal, and that it draws nothing from the stream.

#include "sim/delays/fixed_delay.h"

#include <catch2/catch.hpp>
#include <cmath>
#include <vector>

#include "models/base/random_stream.h"

namespace stragglersim::sim {
namespace {

FixedDelay::Options fixed_times(std::vector<double> times) {
  FixedDelay::Options o;
  o.times = std::move(times);
  return o;
}

}  // namespace

TEST_CASE("fixed delay: every draw is exactly times times load", "[sim][fixed]") {
  FixedDelay d({1.0, 0.5, 2.0}, fixed_times({0.25, 3.0, 1.5}));
  RandomEngine rng = make_engine(7, Stream::kDelays);
  std::vector<double> out(3);
  for (std::uint64_t it = 1; it <= 5; ++it) {
    d.sample(it, rng, out);
    CHECK(out == std::vector<double>{0.25, 1.5, 3.0});
  }
  CHECK(d.time(1) == 3.0);
}

TEST_CASE("fixed delay: draws nothing from the stream", "[sim][fixed]") {
  FixedDelay d({1.0, 1.0}, fixed_times({1.0, 2.0}));
  RandomEngine used = make_engine(11, Stream::kDelays);
  RandomEngine untouched = make_engine(11, Stream::kDelays);
  std::vector<double> out(2);
  d.sample(1, used, out);
  CHECK(used() == untouched());
}

TEST_CASE("fixed delay: the sqrt and linear formulas number workers from 1", "[sim][fixed]") {
  FixedDelay::Options o;
  o.formula = FixedDelay::Formula::kSqrt;
  o.scale = 2.0;
  FixedDelay root({1.0, 1.0, 1.0, 1.0}, o);
  for (int i = 0; i < 4; ++i) {
    CHECK(root.mean(i) == 2.0 * std::sqrt(static_cast<double>(i + 1)));
  }
  o.formula = FixedDelay::Formula::kLinear;
  FixedDelay linear({1.0, 2.0, 1.0}, o);
  CHECK(linear.mean(0) == 2.0);
  CHECK(linear.mean(1) == 8.0);  // τ_2 = 4, load 2
  CHECK(linear.mean(2) == 6.0);
  // A list is scaled too.
  o = fixed_times({1.0, 3.0});
  o.scale = 0.5;
  CHECK(FixedDelay({1.0, 1.0}, o).mean(1) == 1.5);
}

TEST_CASE("fixed delay: the marginal is a point mass at times times load", "[sim][fixed]") {
  FixedDelay d({2.0, 0.0}, fixed_times({1.5, 4.0}));
  CHECK(d.cdf(0, 2.999) == 0.0);
  CHECK(d.cdf(0, 3.0) == 1.0);
  CHECK(d.mean(0) == 3.0);
  CHECK(d.variance(0) == 0.0);
  CHECK(d.lower_bound(0) == 3.0);
  REQUIRE(d.atoms(0).size() == 1);
  CHECK(d.atoms(0)[0] == 3.0);
  CHECK(d.mean(1) == 0.0);  // a worker holding nothing answers at once
  CHECK_FALSE(d.shifted_exponential().has_value());
  CHECK_FALSE(d.time_varying());
}

TEST_CASE("fixed delay: validate names the first bad time", "[sim][fixed]") {
  auto v = fixed_times({1.0, 0.0, -1.0}).validate(3);
  REQUIRE(v);
  CHECK(v->field == "times");
  CHECK(v->got == Violation::Got::kElement);
  CHECK(v->index == 1);
  v = fixed_times({1.0}).validate(3);
  REQUIRE(v);
  CHECK(v->got == Violation::Got::kSize);
  FixedDelay::Options o;
  o.formula = FixedDelay::Formula::kSqrt;
  o.scale = -1.0;
  v = o.validate(3);
  REQUIRE(v);
  CHECK(v->field == "scale");
  o.scale = 1.0;
  CHECK_FALSE(o.validate(3));
}

}  // namespace stragglersim::sim
