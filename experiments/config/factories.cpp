#include "experiments/config/factories.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "codes/bernoulli_gradient_code.h"
#include "codes/cyclic_mds_code.h"
#include "codes/cyclic_repetition_code.h"
#include "codes/expander_graph_code.h"
#include "codes/fractional_repetition_code.h"
#include "codes/stochastic_gradient_code.h"
#include "codes/uncoded_code.h"
#include "experiments/config/config_error.h"
#include "models/loss_model.h"
#include "sim/bimodal_delay.h"
#include "sim/delay_model.h"
#include "sim/heterogeneous_delay.h"
#include "sim/pareto_delay.h"

namespace stragglersim::experiments {

template <typename Factory>
std::vector<std::string> names_of(const std::vector<FactoryRow<Factory>>& table) {
  std::vector<std::string> names;
  names.reserve(table.size());
  for (const auto& row : table) {
    names.push_back(row.name);
  }
  std::sort(names.begin(), names.end());
  return names;
}

template std::vector<std::string> names_of(const std::vector<FactoryRow<CodeFactory>>&);
template std::vector<std::string> names_of(const std::vector<FactoryRow<DelayFactory>>&);
template std::vector<std::string> names_of(const std::vector<FactoryRow<LossFactory>>&);
template std::vector<std::string> names_of(const std::vector<FactoryRow<StoppingFactory>>&);

namespace {

/// Codes with k = n (uncoded, FRC, cyclic codes) reject any other partition count.
void require_square(const std::string& code, const ClusterShape& shape) {
  if (shape.partitions != shape.workers) {
    throw ConfigError(
        fmt::format("{}:/partitions: code '{}' needs one partition per worker; "
                    "got {}; expected workers = {}",
                    shape.file,
                    code,
                    shape.partitions,
                    shape.workers));
  }
}

std::shared_ptr<const codes::GradientCode> make_uncoded(JsonReader& code,
                                                        const ClusterShape& shape) {
  require_square("uncoded", shape);
  code.finish();
  return std::make_shared<codes::UncodedCode>(shape.workers);
}

std::shared_ptr<const codes::GradientCode> make_frc(JsonReader& code, const ClusterShape& shape) {
  require_square("frc", shape);
  const auto d = code.integer("d", std::nullopt, 1, shape.workers);
  if (shape.workers % d != 0) {
    code.fail_value("d",
                    "replication must divide the workers",
                    d,
                    fmt::format("a divisor of workers = {}", shape.workers));
  }
  code.finish();
  return std::make_shared<codes::FractionalRepetitionCode>(shape.workers, static_cast<int>(d));
}

/// s for the cyclic codes: 0 ≤ s < n.
int read_s(JsonReader& code, const ClusterShape& shape) {
  return static_cast<int>(code.integer("s", std::nullopt, 0, shape.workers - 1));
}

std::shared_ptr<const codes::GradientCode> make_crc(JsonReader& code, const ClusterShape& shape) {
  require_square("crc", shape);
  const int s = read_s(code, shape);
  code.finish();
  return std::make_shared<codes::CyclicRepetitionCode>(shape.workers, s, shape.seed);
}

std::shared_ptr<const codes::GradientCode> make_cyclic_mds(JsonReader& code,
                                                           const ClusterShape& shape) {
  require_square("cyclic_mds", shape);
  const int s = read_s(code, shape);
  if ((shape.workers - s) % 2 == 0 && s + 1 >= shape.workers) {
    code.fail_value("s",
                    "no real cyclic MDS code: n − s is even and s + 1 leaves no worker",
                    s,
                    fmt::format("s < {} for workers = {}", shape.workers - 1, shape.workers));
  }
  code.finish();
  return std::make_shared<codes::CyclicMdsCode>(shape.workers, s);
}

std::shared_ptr<const codes::GradientCode> make_bgc(JsonReader& code, const ClusterShape& shape) {
  const double d = code.positive("d", std::nullopt);
  if (d > shape.workers) {
    code.fail_value("d", "out of range", d, fmt::format("a number in (0, {}]", shape.workers));
  }
  code.finish();
  return std::make_shared<codes::BernoulliGradientCode>(
      shape.workers, shape.partitions, d, shape.seed);
}

std::shared_ptr<const codes::GradientCode> make_expander(JsonReader& code,
                                                         const ClusterShape& shape) {
  // Glasgow & Wootters: partitions are the vertices of a d-regular graph, workers its edges,
  // so k = 2n/d.
  const auto d = code.integer("d", std::nullopt, 1, shape.workers);
  if ((2 * shape.workers) % d != 0 || 2 * shape.workers / d < d + 1) {
    code.fail_value(
        "d",
        "no d-regular graph with one edge per worker",
        d,
        fmt::format("d dividing 2·workers = {} with 2·workers/d > d", 2 * shape.workers));
  }
  const int k = static_cast<int>(2 * shape.workers / d);
  if (shape.partitions_given && shape.partitions != k) {
    throw ConfigError(
        fmt::format("{}:/partitions: code 'expander' has k = 2n/d partitions; got {}; "
                    "expected {} or no partitions key",
                    shape.file,
                    shape.partitions,
                    k));
  }
  code.finish();
  return std::make_shared<codes::ExpanderGraphCode>(shape.workers, static_cast<int>(d), shape.seed);
}

std::shared_ptr<const codes::GradientCode> make_sgc(JsonReader& code, const ClusterShape& shape) {
  const auto d = code.integer("d", std::nullopt, 1, shape.workers);
  std::optional<double> p;
  if (code.has("p")) {
    p = code.number("p", std::nullopt, 0.0, 0.999999);
  }
  code.finish();
  return std::make_shared<codes::StochasticGradientCode>(
      shape.workers, shape.partitions, static_cast<int>(d), shape.seed, p);
}

std::function<std::unique_ptr<sim::DelayModel>()> make_shifted_exponential(
    JsonReader& delay, const std::vector<double>& loads) {
  const double shift = delay.number("shift", 1.0, 0.0);
  const double rate = delay.positive("rate", 1.0);
  const auto tail = delay.choice("tail", "tail scaling", {"load", "none"}, "load");
  delay.finish();
  const auto scaling = tail == "load" ? sim::TailScaling::kLoad : sim::TailScaling::kNone;
  return
      [=] { return std::make_unique<sim::ShiftedExponentialDelay>(loads, shift, rate, scaling); };
}

sim::TailScaling read_tail(JsonReader& delay) {
  return delay.choice("tail", "tail scaling", {"load", "none"}, "load") == "load"
             ? sim::TailScaling::kLoad
             : sim::TailScaling::kNone;
}

std::function<std::unique_ptr<sim::DelayModel>()> make_pareto(JsonReader& delay,
                                                              const std::vector<double>& loads) {
  const double shift = delay.number("shift", 1.0, 0.0);
  const double scale = delay.positive("scale", 1.0);
  const double shape = delay.positive("shape", 2.5);
  const auto tail = read_tail(delay);
  delay.finish();
  return [=] { return std::make_unique<sim::ParetoDelay>(loads, shift, scale, shape, tail); };
}

std::function<std::unique_ptr<sim::DelayModel>()> make_bimodal(JsonReader& delay,
                                                               const std::vector<double>& loads) {
  const double shift = delay.number("shift", 1.0, 0.0);
  const double rate = delay.positive("rate", 1.0);
  const auto tail = read_tail(delay);
  const double probability = delay.number("slow_probability", 0.1, 0.0, 1.0);
  const double slowdown = delay.number("slowdown", 5.0, 1.0);
  delay.finish();
  return [=] {
    return std::make_unique<sim::BimodalDelay>(loads, shift, rate, tail, probability, slowdown);
  };
}

std::function<std::unique_ptr<sim::DelayModel>()> make_heterogeneous(
    JsonReader& delay, const std::vector<double>& loads) {
  const double shift = delay.number("shift", 1.0, 0.0);
  const double rate = delay.positive("rate", 1.0);
  const auto tail = read_tail(delay);
  if (!delay.has("factors")) {
    delay.fail("factors", "missing required key; expected an array of one speed factor per worker");
  }
  const auto& raw = delay.raw("factors");
  const std::string expected =
      fmt::format("an array of {} numbers > 0 (one slowdown factor per worker)", loads.size());
  if (!raw.is_array() || raw.size() != loads.size()) {
    delay.fail_value(
        "factors", "wrong shape", raw.is_array() ? nlohmann::json(raw.size()) : raw, expected);
  }
  std::vector<double> factors;
  for (const auto& f : raw) {
    if (!f.is_number() || !(f.get<double>() > 0.0)) {
      delay.fail_value("factors", "bad factor", f, expected);
    }
    factors.push_back(f.get<double>());
  }
  delay.finish();
  return
      [=] { return std::make_unique<sim::HeterogeneousDelay>(loads, factors, shift, rate, tail); };
}

/// r from "r" or "fraction" (r = ⌈fraction·n⌉), exactly one of them.
int read_r(JsonReader& stopping, int workers) {
  if (stopping.has("r") && stopping.has("fraction")) {
    stopping.fail("fraction", "give either r or fraction, not both");
  }
  if (stopping.has("fraction")) {
    const double f = stopping.number("fraction", std::nullopt);
    if (!(f > 0.0 && f <= 1.0)) {
      stopping.fail_value("fraction", "out of range", f, "a number in (0, 1]");
    }
    return std::max(1, static_cast<int>(std::ceil(f * workers - 1e-9)));
  }
  return static_cast<int>(stopping.integer("r", std::nullopt, 1, workers));
}

std::shared_ptr<const sim::StoppingRule> make_all(
    JsonReader& stopping, const std::shared_ptr<const codes::GradientCode>& code) {
  stopping.finish();
  return std::make_shared<sim::AllStopping>(code->workers());
}

std::shared_ptr<const sim::StoppingRule> make_first_r(
    JsonReader& stopping, const std::shared_ptr<const codes::GradientCode>& code) {
  const int r = read_r(stopping, code->workers());
  stopping.finish();
  return std::make_shared<sim::FirstRStopping>(r);
}

std::shared_ptr<const sim::StoppingRule> make_deadline(
    JsonReader& stopping, const std::shared_ptr<const codes::GradientCode>& code) {
  const double after = stopping.positive("after", std::nullopt);
  stopping.finish();
  return std::make_shared<sim::DeadlineStopping>(after, code->workers());
}

std::shared_ptr<const sim::StoppingRule> make_decodable(
    JsonReader& stopping, const std::shared_ptr<const codes::GradientCode>& code) {
  stopping.finish();
  return std::make_shared<sim::DecodableStopping>(code);
}

std::shared_ptr<const sim::StoppingRule> make_first_r_or_decodable(
    JsonReader& stopping, const std::shared_ptr<const codes::GradientCode>& code) {
  const int r = read_r(stopping, code->workers());
  stopping.finish();
  return std::make_shared<sim::FirstROrDecodableStopping>(r, code);
}

}  // namespace

const std::vector<FactoryRow<CodeFactory>>& code_factories() {
  static const std::vector<FactoryRow<CodeFactory>> table = {
      {"bgc", make_bgc},
      {"crc", make_crc},
      {"cyclic_mds", make_cyclic_mds},
      {"expander", make_expander},
      {"frc", make_frc},
      {"sgc", make_sgc},
      {"uncoded", make_uncoded},
  };
  return table;
}

const std::vector<FactoryRow<DelayFactory>>& delay_factories() {
  static const std::vector<FactoryRow<DelayFactory>> table = {
      {"bimodal", make_bimodal},
      {"heterogeneous", make_heterogeneous},
      {"pareto", make_pareto},
      {"shifted_exponential", make_shifted_exponential},
  };
  return table;
}

const std::vector<FactoryRow<LossFactory>>& loss_factories() {
  static const std::vector<FactoryRow<LossFactory>> table = {
      {"least_squares",
       [] { return std::shared_ptr<const models::LossModel>(models::make_least_squares_loss()); }},
      {"logistic",
       [] { return std::shared_ptr<const models::LossModel>(models::make_logistic_loss()); }},
  };
  return table;
}

const std::vector<FactoryRow<StoppingFactory>>& stopping_factories() {
  static const std::vector<FactoryRow<StoppingFactory>> table = {
      {"all", make_all},
      {"deadline", make_deadline},
      {"decodable", make_decodable},
      {"first_r", make_first_r},
      {"first_r_or_decodable", make_first_r_or_decodable},
  };
  return table;
}

}  // namespace stragglersim::experiments
