#include <algorithm>
#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>
#include <set>
#include <string>

#include "experiments/config/factories.h"
#include "tests/test_support.h"

namespace stragglersim::experiments {

using stragglersim::testing::run_stragglersim;
using stragglersim::testing::scratch_dir;

namespace {

/// `stragglersim <args>` in a fresh scratch folder `name`.
stragglersim::testing::CommandResult run_in(const std::string& name, const std::string& args) {
  return run_stragglersim(args, scratch_dir("list", name));
}

}  // namespace

TEST_CASE("list: prints every row of the factory tables with its keys", "[experiments][list]") {
  const auto r = run_in("text", "list delays");
  REQUIRE(r.status == 0);
  CHECK(r.out ==
        "delays: \"delay\": {\"kind\": ...}\n"
        "  bimodal               shifted exponential slowed by a factor slowdown with probability "
        "slow_probability\n"
        "                        keys: shift (1), rate (1), tail (load), slow_probability (0.1), "
        "slowdown (5)\n"
        "  fixed                 no randomness: worker i always takes scale*times[i]*load (times "
        "an array, or \"sqrt\": scale*sqrt(i), \"linear\": scale*i, i = 1..n); the fixed "
        "computation model\n"
        "                        keys: times, scale (1)\n"
        "  gamma                 load-scaled shift plus a Gamma(shape, scale) tail\n"
        "                        keys: shift (1), shape (2), scale (0.5), tail (load)\n"
        "  heterogeneous         shifted exponential times a fixed slowdown factor per worker\n"
        "                        keys: shift (1), rate (1), tail (load), factors\n"
        "  heterogeneous_markov  persistent stragglers on heterogeneous workers: a fixed factor "
        "per worker times the markov model's time\n"
        "                        keys: shift (1), rate (1), slow_shift (4), slow_rate (0.25), "
        "to_slow (0.02), to_normal (0.2), tail (load), factors\n"
        "  lognormal             load-scaled shift plus a log-normal tail: log of the tail ~ "
        "N(log_mean, log_sd^2)\n"
        "                        keys: shift (1), log_mean (0), log_sd (0.5), tail (load)\n"
        "  markov                persistent stragglers: per-worker normal/slow Markov chain "
        "(to_slow, to_normal), shifted exponential per state\n"
        "                        keys: shift (1), rate (1), slow_shift (4), slow_rate (0.25), "
        "to_slow (0.02), to_normal (0.2), tail (load)\n"
        "  pareto                load-scaled shift plus a Pareto(scale, shape) tail "
        "(heavy-tailed)\n"
        "                        keys: shift (1), scale (1), shape (2.5), tail (load)\n"
        "  shifted_exponential   T = load*shift + s(load)*Exp(1)/rate; tail load (Model A) or "
        "none (Model B)\n"
        "                        keys: shift (1), rate (1), tail (load)\n"
        "  trace                 measured per-worker times from a CSV file "
        "(iteration,worker,seconds or worker,seconds), replayed in order (cycle), resampled by "
        "rows (bootstrap), by blocks of consecutive rows (block) or per worker (empirical)\n"
        "                        keys: path, mode (cycle), block (auto), start (0), tail (load)\n"
        "  universal             compute power varying with the clock, a computation of load l "
        "ending when the power's integral reaches l: powers from a CSV file (time,worker,power, "
        "repeated with its period) or a Markov chain per worker (markov: powers, rates or "
        "switch_rate), times speeds (an array, or \"sqrt\": 1/sqrt(i)); the universal "
        "computation model (simulated clock only)\n"
        "                        keys: powers, markov, speeds\n"
        "  weibull               load-scaled shift plus a Weibull(shape, scale) tail\n"
        "                        keys: shift (1), shape (1.5), scale (1), tail (load)\n");
}

TEST_CASE("list: --json holds the same rows as the tables", "[experiments][list]") {
  const auto r = run_in("json", "list --json");
  REQUIRE(r.status == 0);
  const auto j = nlohmann::json::parse(r.out);
  CHECK(j.size() == 8);
  std::set<std::string> codes;
  for (const auto& row : j["codes"]["rows"]) {
    codes.insert(row["name"].get<std::string>());
  }
  const auto expected = names_of(code_factories());
  CHECK(codes == std::set<std::string>(expected.begin(), expected.end()));
  const auto& rules = j["rules"]["rows"];
  const auto at = std::find_if(
      rules.begin(), rules.end(), [](const auto& row) { return row["name"] == "first_r"; });
  REQUIRE(at != rules.end());
  const auto& first_r = *at;
  CHECK(first_r["name"] == "first_r");
  CHECK(first_r["keys"][0]["name"] == "r");
  CHECK(first_r["keys"][0]["default"].is_null());
  CHECK(j["delays"]["rows"][7]["keys"][2] ==
        nlohmann::json({{"name", "shape"}, {"default", "2.5"}}));
}

TEST_CASE("list: an unknown category exits 2", "[experiments][list]") {
  const auto r = run_in("bad", "list bogus");
  CHECK(r.status == 2);
  CHECK(r.err ==
        "error: <command line>: unknown category 'bogus'; valid values are: codes, delays, rules, "
        "losses, backends, aggregations, optimizers, generators\n");
}

}  // namespace stragglersim::experiments
