#include <catch2/catch.hpp>
#include <memory>

#include "codes/fractional_repetition_code.h"
#include "sim/delays/bimodal_delay.h"
#include "sim/delays/delay_model.h"
#include "sim/delays/heterogeneous_delay.h"
#include "sim/delays/pareto_delay.h"
#include "sim/stopping_rule.h"

namespace stragglersim::sim {

TEST_CASE("sim: stopping rules describe their shape", "[sim][description]") {
  const auto code = std::make_shared<codes::FractionalRepetitionCode>(6, 2);
  CHECK(AllStopping(6).shape().value().kind == RuleKind::kAll);
  const auto first_r = FirstRStopping({.workers = 6, .r = 4}).shape();
  CHECK(first_r.value().kind == RuleKind::kFirstR);
  CHECK(first_r.value().r == 4);
  const auto deadline = DeadlineStopping({.workers = 6, .after = 2.5}).shape();
  CHECK(deadline.value().kind == RuleKind::kDeadline);
  CHECK(deadline.value().deadline == 2.5);
  CHECK(DecodableStopping(code).shape().value().kind == RuleKind::kDecodable);
  const auto either = FirstROrDecodableStopping({.code = code, .r = 5}).shape();
  CHECK(either.value().kind == RuleKind::kFirstROrDecodable);
  CHECK(either.value().r == 5);
}

TEST_CASE("sim: rule options name the violated constraint", "[sim][description]") {
  CHECK(FirstRStopping::Options{.workers = 6, .r = 7}.validate().value().expected ==
        "an integer in [1, 6]");
  CHECK(FirstRStopping::Options{.workers = 6, .r = 0}.validate().value().field == "r");
  CHECK(DeadlineStopping::Options{.workers = 6, .after = 0.0}.validate().value().field == "after");
  CHECK_FALSE(DeadlineStopping::Options{.workers = 6, .after = 0.5}.validate());
  CHECK_THROWS_AS(FirstRStopping(FirstRStopping::Options{.workers = 3, .r = 4}), std::logic_error);
}

TEST_CASE("sim: only the shifted exponential describes itself as one", "[sim][description]") {
  const std::vector<double> loads = {1.0, 2.0};
  const ShiftedExponentialDelay se(loads, {.shift = 0.5, .rate = 4.0, .tail = TailScaling::kLoad});
  const auto p = se.shifted_exponential();
  REQUIRE(p);
  CHECK(p->shift == 0.5);
  CHECK(p->rate == 4.0);
  CHECK(p->tail == TailScaling::kLoad);
  REQUIRE(p->worker_shift.size() == 2);
  // worker_shift = ℓ·a, worker_scale = ℓ/λ under Model A: the model's own moments.
  for (std::size_t i = 0; i < 2; ++i) {
    CHECK(p->worker_shift[i] == se.lower_bound(static_cast<int>(i)));
    CHECK(p->worker_shift[i] + p->worker_scale[i] == Approx(se.mean(static_cast<int>(i))));
  }
  CHECK(p->worker_scale[1] == Approx(2.0 / 4.0));
  CHECK_FALSE(ParetoDelay(loads, {}).shifted_exponential());
  CHECK_FALSE(BimodalDelay(loads, {}).shifted_exponential());
  CHECK_FALSE(HeterogeneousDelay(loads, {.factors = {1.0, 1.0}}).shifted_exponential());
}

TEST_CASE("sim: delay options name the violated constraint", "[sim][description]") {
  CHECK(BimodalDelay::Options{.slow_probability = 1.5}.validate().value().field ==
        "slow_probability");
  CHECK(BimodalDelay::Options{.slowdown = 0.5}.validate().value().field == "slowdown");
  CHECK(ParetoDelay::Options{.scale = 0.0}.validate().value().field == "scale");
  CHECK(ParetoDelay::Options{.shape = -1.0}.validate().value().field == "shape");
  CHECK(ShiftedExponentialDelay::Options{.rate = 0.0}.validate().value().field == "rate");
  const auto h = HeterogeneousDelay::Options{.factors = {1.0, -1.0}}.validate(2);
  CHECK(h.value().field == "factors");
  CHECK(h.value().got == Violation::Got::kElement);
  CHECK(h.value().index == 1);
  CHECK(HeterogeneousDelay::Options{.factors = {1.0}}.validate(2).value().got ==
        Violation::Got::kSize);
  CHECK_FALSE(BimodalDelay::Options{}.validate());
}

}  // namespace stragglersim::sim
