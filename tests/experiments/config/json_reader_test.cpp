// The reader's unknown-name messages: edit distances by hand and the did-you-mean suggestion.
#include "experiments/config/json_reader.h"

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>
#include <string>

#include "experiments/config/config_error.h"
#include "tests/experiments/config/plan_support.h"

namespace {

using stragglersim::experiments::ConfigError;
using stragglersim::experiments::edit_distance;
using stragglersim::experiments::JsonReader;
using stragglersim::experiments::nearest_name;

/// The message finish() throws for `object` when its valid keys are `valid`.
std::string finish_error(const nlohmann::json& object, const std::vector<std::string>& valid) {
  const JsonReader reader(object, "cfg.json", "/delay");
  try {
    reader.finish(valid);
  } catch (const ConfigError& e) {
    return e.what();
  }
  return "no error";
}

}  // namespace

TEST_CASE("json reader: edit distances by hand", "[experiments][config][didyoumean]") {
  // One deletion, a transposition (two substitutions), an empty word, the textbook pair.
  CHECK(edit_distance("runn", "run") == 1);
  CHECK(edit_distance("thoery", "theory") == 2);
  CHECK(edit_distance("", "list") == 4);
  CHECK(edit_distance("kitten", "sitting") == 3);
  CHECK(edit_distance("same", "same") == 0);
}

TEST_CASE("json reader: nearest_name suggests only near misses",
          "[experiments][config][didyoumean]") {
  const std::vector<std::string> keys = {"workers", "seed", "partitions", "target_loss"};
  CHECK(nearest_name("worker", keys) == "workers");
  CHECK(nearest_name("targetloss", keys) == "target_loss");
  CHECK(nearest_name("partitons", keys) == "partitions");
  // Exact names and far words get nothing: "sed" is 1 from "seed" (allowed: 4 / 3 = 1), "sd" is
  // 2 from "seed" but 4 / 3 allows 1.
  CHECK(nearest_name("seed", keys) == std::nullopt);
  CHECK(nearest_name("sed", keys) == "seed");
  CHECK(nearest_name("sd", keys) == std::nullopt);
  CHECK(nearest_name("simulate", keys) == std::nullopt);
  CHECK(nearest_name("x", {}) == std::nullopt);
  // Ties go to the first in alphabetical order: "rat" is 1 from both "rate" and "rats".
  CHECK(nearest_name("rat", {"rats", "rate"}) == "rate");
}

TEST_CASE("json reader: unknown keys and kinds name the nearest valid one",
          "[experiments][config][didyoumean]") {
  CHECK(finish_error({{"rte", 1.0}}, {"shift", "rate", "kind", "tail"}) ==
        "cfg.json:/delay/rte: unknown key 'rte'; did you mean 'rate'? valid keys are: kind, rate, "
        "shift, tail");
  CHECK(finish_error({{"bogus", 1.0}}, {"shift", "rate"}) ==
        "cfg.json:/delay/bogus: unknown key 'bogus'; valid keys are: rate, shift");
  CHECK(finish_error({{"rate", 1.0}}, {"shift", "rate"}) == "no error");

  // A whole config: the top-level reader (finish() over the keys it read) and a kind.
  auto c = stragglersim::testing::config_with_data(nullptr);
  c.erase("loss");
  c["optimizer"] = {{"iterations", 5}};  // a delay-only run reads only the iteration count
  c["seeds"] = 3;
  CHECK(stragglersim::testing::plan_error(c, ".") ==
        "cfg.json:/seeds: unknown key 'seeds'; did you mean 'seed'? valid keys are: aggregation, "
        "backend, "
        "code, data, data_seed, delay, divergence_bound, name, network, optimizer, partitions, "
        "rescale, sampler, seed, "
        "stopping, stragglers, target_loss, threads, workers");
  c.erase("seeds");
  c["delay"]["kind"] = "paretto";
  CHECK(stragglersim::testing::plan_error(c, ".") ==
        "cfg.json:/delay/kind: unknown delay model 'paretto'; did you mean 'pareto'? valid values "
        "are: bimodal, fixed, gamma, heterogeneous, heterogeneous_markov, lognormal, markov, "
        "pareto, shifted_exponential, trace, universal, weibull");
}

TEST_CASE("json reader: a NUL or control character in a key or value is escaped in the message",
          "[experiments][config]") {
  // Issue 31 item 18: the C string of the message ended at the NUL ("error: c.json:/a").
  const std::string nul_key = std::string("a") + '\0' + "b";
  CHECK(finish_error({{nul_key, 1.0}}, {"rate"}) ==
        "cfg.json:/delay/a\\u0000b: unknown key 'a\\u0000b'; valid keys are: rate");
  CHECK(finish_error({{"x\ty", 1.0}}, {"rate"}) ==
        "cfg.json:/delay/x\\u0009y: unknown key 'x\\u0009y'; valid keys are: rate");
  auto c = stragglersim::testing::config_with_data(nullptr);
  c.erase("loss");
  c["optimizer"] = {{"iterations", 5}};
  c["delay"]["kind"] = std::string("par") + '\0' + "eto";
  const std::string message = stragglersim::testing::plan_error(c, ".");
  CHECK(message.find('\0') == std::string::npos);
  CHECK(message.rfind("cfg.json:/delay/kind: unknown delay model 'par\\u0000eto'", 0) == 0);
}
