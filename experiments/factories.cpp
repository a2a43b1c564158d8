#include "experiments/factories.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "codes/fractional_repetition_code.h"
#include "codes/uncoded_code.h"
#include "experiments/config_error.h"
#include "models/loss_model.h"
#include "sim/delay_model.h"

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
      {"frc", make_frc},
      {"uncoded", make_uncoded},
  };
  return table;
}

const std::vector<FactoryRow<DelayFactory>>& delay_factories() {
  static const std::vector<FactoryRow<DelayFactory>> table = {
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
