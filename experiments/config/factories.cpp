#include "experiments/config/factories.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <limits>

#include "codes/bernoulli_gradient_code.h"
#include "codes/cyclic_mds_code.h"
#include "codes/cyclic_repetition_code.h"
#include "codes/dynamic_frc_code.h"
#include "codes/expander_graph_code.h"
#include "codes/fractional_repetition_code.h"
#include "codes/proportional_code.h"
#include "codes/proportional_cyclic_code.h"
#include "codes/stochastic_gradient_code.h"
#include "codes/uncoded_code.h"
#include "experiments/config/config_error.h"
#include "models/fashion_mnist.h"
#include "models/loss_model.h"
#include "models/softmax_network.h"
#include "models/synthetic_data.h"
#include "models/tabular_synthetic_data.h"
#include "sim/delays/bimodal_delay.h"
#include "sim/delays/delay_model.h"
#include "sim/delays/gamma_delay.h"
#include "sim/delays/heterogeneous_delay.h"
#include "sim/delays/heterogeneous_markov_delay.h"
#include "sim/delays/lognormal_delay.h"
#include "sim/delays/markov_delay.h"
#include "sim/delays/pareto_delay.h"
#include "sim/delays/trace_delay.h"
#include "sim/delays/weibull_delay.h"
#include "sim/multi_message.h"

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

void reject(JsonReader& reader, const ClusterShape* shape, const Violation& v) {
  if (shape != nullptr && v.field == "partitions") {
    throw ConfigError(fmt::format("{}:/partitions: {}; got {}; expected {}",
                                  shape->file,
                                  v.problem,
                                  shape->partitions,
                                  v.expected));
  }
  // A defaulted field has no config value of its own: show the default that was taken.
  const nlohmann::json got = reader.has(v.field)
                                 ? reader.raw(v.field)
                                 : reader.resolved().value(v.field, nlohmann::json());
  switch (v.got) {
    case Violation::Got::kValue:
      reader.fail_value(v.field, v.problem, got, v.expected);
    case Violation::Got::kElement:
      reader.fail_value(v.field, v.problem, got.at(v.index), v.expected);
    case Violation::Got::kSize:
      reader.fail_value(v.field, v.problem, got.size(), v.expected);
  }
  reader.fail_value(v.field, v.problem, got, v.expected);
}

namespace {

/// Integer config value saturated to int: an out-of-int value then fails the class's own range
/// check with the config's value in the message.
int to_int(std::int64_t x) {
  return static_cast<int>(std::clamp<std::int64_t>(
      x, std::numeric_limits<int>::min(), std::numeric_limits<int>::max()));
}

/// Builds from options, or turns the violated constraint into a ConfigError.
template <typename Options>
const Options& checked(JsonReader& reader, const ClusterShape& shape, const Options& options) {
  if (const Validation v = options.validate()) {
    reject(reader, &shape, *v);
  }
  return options;
}

std::shared_ptr<const codes::GradientCode> make_uncoded(JsonReader& code,
                                                        const ClusterShape& shape) {
  const codes::UncodedCode::Options o{shape.workers, shape.partitions};
  if (shape.compact) {
    return std::make_shared<codes::UncodedCode>(checked(code, shape, o), codes::CompactTag{});
  }
  return std::make_shared<codes::UncodedCode>(checked(code, shape, o));
}

std::shared_ptr<const codes::GradientCode> make_frc(JsonReader& code, const ClusterShape& shape) {
  codes::FractionalRepetitionCode::Options o{shape.workers, shape.partitions};
  o.d = to_int(code.integer("d", std::nullopt));
  if (shape.compact) {
    return std::make_shared<codes::FractionalRepetitionCode>(checked(code, shape, o),
                                                             codes::CompactTag{});
  }
  return std::make_shared<codes::FractionalRepetitionCode>(checked(code, shape, o));
}

/// FRC whose groups are re-formed every "every" iterations (dynamic clustering).
std::shared_ptr<const codes::GradientCode> make_dynamic_frc(JsonReader& code,
                                                            const ClusterShape& shape) {
  codes::DynamicFrcCode::Options o{shape.workers, shape.partitions};
  o.d = to_int(code.integer("d", std::nullopt));
  o.every = to_int(code.integer("every", o.every));
  return std::make_shared<codes::DynamicFrcCode>(checked(code, shape, o));
}

std::shared_ptr<const codes::GradientCode> make_crc(JsonReader& code, const ClusterShape& shape) {
  codes::CyclicRepetitionCode::Options o{shape.workers, shape.partitions};
  o.s = to_int(code.integer("s", std::nullopt));
  o.seed = shape.seed;
  return std::make_shared<codes::CyclicRepetitionCode>(checked(code, shape, o));
}

std::shared_ptr<const codes::GradientCode> make_cyclic_mds(JsonReader& code,
                                                           const ClusterShape& shape) {
  codes::CyclicMdsCode::Options o{shape.workers, shape.partitions};
  o.s = to_int(code.integer("s", std::nullopt));
  return std::make_shared<codes::CyclicMdsCode>(checked(code, shape, o));
}

std::shared_ptr<const codes::GradientCode> make_bgc(JsonReader& code, const ClusterShape& shape) {
  codes::BernoulliGradientCode::Options o{shape.workers, shape.partitions};
  o.d = code.number("d", std::nullopt);
  o.seed = shape.seed;
  return std::make_shared<codes::BernoulliGradientCode>(checked(code, shape, o));
}

std::shared_ptr<const codes::GradientCode> make_expander(JsonReader& code,
                                                         const ClusterShape& shape) {
  codes::ExpanderGraphCode::Options o{shape.workers, shape.partitions_given ? shape.partitions : 0};
  o.d = to_int(code.integer("d", std::nullopt));
  o.seed = shape.seed;
  return std::make_shared<codes::ExpanderGraphCode>(checked(code, shape, o));
}

std::shared_ptr<const codes::GradientCode> make_sgc(JsonReader& code, const ClusterShape& shape) {
  codes::StochasticGradientCode::Options o{shape.workers, shape.partitions};
  o.d = to_int(code.integer("d", std::nullopt));
  o.seed = shape.seed;
  if (code.has("p")) {
    o.p = code.number("p", std::nullopt);
  }
  return std::make_shared<codes::StochasticGradientCode>(checked(code, shape, o));
}

sim::TailScaling read_tail(JsonReader& delay) {
  return delay.choice("tail", "tail scaling", {"load", "none"}, "load") == "load"
             ? sim::TailScaling::kLoad
             : sim::TailScaling::kNone;
}

/// Delay options are checked without a ClusterShape: none of their fields is top-level.
template <typename Options>
const Options& checked_delay(JsonReader& reader, const Options& options) {
  if (const Validation v = options.validate()) {
    reject(reader, nullptr, *v);
  }
  return options;
}

DelayMaker make_shifted_exponential(JsonReader& delay,
                                    const sim::WorkerLoads& loads,
                                    const std::filesystem::path& /*base_dir*/) {
  sim::ShiftedExponentialDelay::Options o;
  o.shift = delay.number("shift", o.shift);
  o.rate = delay.number("rate", o.rate);
  o.tail = read_tail(delay);
  checked_delay(delay, o);
  return [=] { return sim::ShiftedExponentialDelay::make(loads, o); };
}

/// shift, shape, scale and tail of the Pareto, gamma and Weibull models.
template <typename Options>
Options read_shape_scale(JsonReader& delay) {
  Options o;
  o.shift = delay.number("shift", o.shift);
  o.shape = delay.number("shape", o.shape);
  o.scale = delay.number("scale", o.scale);
  o.tail = read_tail(delay);
  return checked_delay(delay, o);
}

DelayMaker make_pareto(JsonReader& delay,
                       const sim::WorkerLoads& worker_loads,
                       const std::filesystem::path& /*base_dir*/) {
  const std::vector<double> loads = worker_loads.expanded();
  const auto o = read_shape_scale<sim::ParetoDelay::Options>(delay);
  return [=] { return std::make_unique<sim::ParetoDelay>(loads, o); };
}

DelayMaker make_bimodal(JsonReader& delay,
                        const sim::WorkerLoads& worker_loads,
                        const std::filesystem::path& /*base_dir*/) {
  const std::vector<double> loads = worker_loads.expanded();
  sim::BimodalDelay::Options o;
  o.shift = delay.number("shift", o.shift);
  o.rate = delay.number("rate", o.rate);
  o.tail = read_tail(delay);
  o.slow_probability = delay.number("slow_probability", o.slow_probability);
  o.slowdown = delay.number("slowdown", o.slowdown);
  checked_delay(delay, o);
  return [=] { return std::make_unique<sim::BimodalDelay>(loads, o); };
}

sim::MarkovDelay::Options read_markov(JsonReader& delay) {
  sim::MarkovDelay::Options o;
  o.shift = delay.number("shift", o.shift);
  o.rate = delay.number("rate", o.rate);
  o.slow_shift = delay.number("slow_shift", o.slow_shift);
  o.slow_rate = delay.number("slow_rate", o.slow_rate);
  o.to_slow = delay.number("to_slow", o.to_slow);
  o.to_normal = delay.number("to_normal", o.to_normal);
  o.tail = read_tail(delay);
  return checked_delay(delay, o);
}

DelayMaker make_markov(JsonReader& delay,
                       const sim::WorkerLoads& worker_loads,
                       const std::filesystem::path& /*base_dir*/) {
  const std::vector<double> loads = worker_loads.expanded();
  const sim::MarkovDelay::Options o = read_markov(delay);
  return [=] { return std::make_unique<sim::MarkovDelay>(loads, o); };
}

/// Block mode's "block": an integer L in [1, T] or "auto" (0: TraceDelay chooses). Only block
/// mode on an iteration-form trace reads it.
std::size_t read_block_length(JsonReader& delay,
                              const sim::DelayTrace& trace,
                              sim::TraceDelay::Mode mode) {
  if (mode != sim::TraceDelay::Mode::kBlock) {
    if (delay.has("block")) {
      delay.fail_value(
          "block", "only block mode reads a block length", delay.raw("block"), "mode \"block\"");
    }
    return 0;
  }
  if (!trace.has_iterations) {
    delay.fail_value("mode",
                     "block mode needs iterations",
                     "block",
                     "a trace with an iteration column (a worker,seconds pool has no rows)");
  }
  const auto rows = static_cast<std::int64_t>(trace.per_iteration.size());
  const nlohmann::json value = delay.raw_or("block", "auto");
  if (value.is_string() && value.get<std::string>() == "auto") {
    return 0;
  }
  if (value.is_string()) {
    delay.fail_value(
        "block",
        "invalid block length",
        value,
        fmt::format("\"auto\" or an integer in [1, {}] (the trace's iterations)", rows));
  }
  return static_cast<std::size_t>(delay.integer("block", std::nullopt, 1, rows));
}

/// Cycle mode's "start": a row index in [0, T) or "random" (a uniform row per run).
void read_start(JsonReader& delay, const sim::DelayTrace& trace, sim::TraceDelay::Options& o) {
  if (!delay.has("start")) {
    return;
  }
  if (o.mode != sim::TraceDelay::Mode::kCycle || !trace.has_iterations) {
    delay.fail_value("start",
                     "only cycle mode on an iteration-form trace reads a start row",
                     delay.raw("start"),
                     "mode \"cycle\" and a trace with an iteration column");
  }
  const auto rows = static_cast<std::int64_t>(trace.per_iteration.size());
  const nlohmann::json value = delay.raw("start");
  if (value.is_string() && value.get<std::string>() == "random") {
    o.random_start = true;
    return;
  }
  if (value.is_string()) {
    delay.fail_value(
        "start",
        "invalid start row",
        value,
        fmt::format("\"random\" or an integer in [0, {}] (a row of the trace)", rows - 1));
  }
  o.start = static_cast<std::size_t>(delay.integer("start", std::nullopt, 0, rows - 1));
}

DelayMaker make_lognormal(JsonReader& delay,
                          const sim::WorkerLoads& worker_loads,
                          const std::filesystem::path& /*base_dir*/) {
  const std::vector<double> loads = worker_loads.expanded();
  sim::LogNormalDelay::Options o;
  o.shift = delay.number("shift", o.shift);
  o.log_mean = delay.number("log_mean", o.log_mean);
  o.log_sd = delay.number("log_sd", o.log_sd);
  o.tail = read_tail(delay);
  checked_delay(delay, o);
  return [=] { return std::make_unique<sim::LogNormalDelay>(loads, o); };
}

DelayMaker make_gamma(JsonReader& delay,
                      const sim::WorkerLoads& worker_loads,
                      const std::filesystem::path& /*base_dir*/) {
  const std::vector<double> loads = worker_loads.expanded();
  const auto o = read_shape_scale<sim::GammaDelay::Options>(delay);
  return [=] { return std::make_unique<sim::GammaDelay>(loads, o); };
}

DelayMaker make_weibull(JsonReader& delay,
                        const sim::WorkerLoads& worker_loads,
                        const std::filesystem::path& /*base_dir*/) {
  const std::vector<double> loads = worker_loads.expanded();
  const auto o = read_shape_scale<sim::WeibullDelay::Options>(delay);
  return [=] { return std::make_unique<sim::WeibullDelay>(loads, o); };
}

/// The trace is read once, here, so that a bad file fails the config (exit 2) before any run.
DelayMaker make_trace(JsonReader& delay,
                      const sim::WorkerLoads& worker_loads,
                      const std::filesystem::path& base_dir) {
  const std::vector<double> loads = worker_loads.expanded();
  const std::string path = delay.string("path", std::nullopt);
  const std::filesystem::path full =
      std::filesystem::path(path).is_absolute() ? std::filesystem::path(path) : base_dir / path;
  sim::TraceDelay::Options o;
  const std::string mode =
      delay.choice("mode", "trace mode", {"block", "bootstrap", "cycle", "empirical"}, "cycle");
  o.mode = mode == "cycle"       ? sim::TraceDelay::Mode::kCycle
           : mode == "bootstrap" ? sim::TraceDelay::Mode::kBootstrap
           : mode == "block"     ? sim::TraceDelay::Mode::kBlock
                                 : sim::TraceDelay::Mode::kEmpirical;
  o.tail = read_tail(delay);
  auto trace = std::make_shared<sim::DelayTrace>();
  try {
    *trace = sim::read_delay_trace(full.string());
  } catch (const sim::TraceFileError& e) {
    delay.fail("path", e.what());
  }
  o.block = read_block_length(delay, *trace, o.mode);
  read_start(delay, *trace, o);
  if (!trace->censored_lines.empty()) {
    delay.fail("path",
               fmt::format("{}:{}: censored time (empty seconds); expected every time measured "
                           "(remove the iterations with unfinished workers)",
                           trace->path,
                           trace->censored_lines.front()));
  }
  if (trace->workers != static_cast<int>(loads.size())) {
    delay.fail("path",
               fmt::format("trace '{}' has {} workers; expected {} (the run's workers)",
                           path,
                           trace->workers,
                           loads.size()));
  }
  return [=] { return std::make_unique<sim::TraceDelay>(loads, *trace, o); };
}

/// The required "factors" array (JSON types here, values by validate_factors).
std::vector<double> read_factors(JsonReader& delay, std::size_t workers) {
  if (!delay.has("factors")) {
    delay.fail("factors", "missing required key; expected an array of one speed factor per worker");
  }
  const auto& raw = delay.raw("factors");
  const std::string expected =
      fmt::format("an array of {} numbers > 0 (one slowdown factor per worker)", workers);
  if (!raw.is_array()) {
    delay.fail_value("factors", "wrong shape", raw, expected);
  }
  std::vector<double> factors;
  for (const auto& f : raw) {
    if (!f.is_number()) {
      delay.fail_value("factors", "bad factor", f, expected);
    }
    factors.push_back(f.get<double>());
  }
  if (const Validation v = sim::validate_factors(factors, workers)) {
    reject(delay, nullptr, *v);
  }
  return factors;
}

/// The workers' slowdown factors estimated from the run's delay block (docs/model.md §5): its own
/// "factors" (heterogeneous, heterogeneous_markov), or for a trace each worker's mean time over
/// the fastest worker's. Fails at the code's "factors" when the delay has neither.
std::vector<double> delay_factors(JsonReader& code, const ClusterShape& shape) {
  const nlohmann::json& delay = shape.delay;
  const auto fail = [&](const std::string& why) {
    code.fail_value("factors",
                    why,
                    "delay",
                    "\"delay\" with a heterogeneous, heterogeneous_markov or trace delay, or an "
                    "array of one slowdown factor per worker");
  };
  if (!delay.is_object()) {
    fail("the run has no delay block to estimate the factors from");
  }
  if (delay.contains("factors") && delay["factors"].is_array()) {
    std::vector<double> factors;
    for (const auto& f : delay["factors"]) {
      factors.push_back(f.is_number() ? f.get<double>() : 0.0);  // the delay's own check names it
    }
    return factors;
  }
  if (delay.value("kind", "") != "trace" || !delay.contains("path") || !delay["path"].is_string()) {
    fail(fmt::format("the delay '{}' has no per-worker factors", delay.value("kind", "")));
  }
  const std::filesystem::path path = delay["path"].get<std::string>();
  sim::DelayTrace trace;
  try {
    trace = sim::read_delay_trace((path.is_absolute() ? path : shape.base_dir / path).string());
  } catch (const sim::TraceFileError& e) {
    fail(fmt::format("the delay's trace cannot be read ({})", e.what()));
  }
  std::vector<double> means;
  for (const auto& times : trace.per_worker) {
    double sum = 0.0;
    for (const double t : times) sum += t;
    means.push_back(sum / static_cast<double>(times.size()));
  }
  const double fastest = means.empty() ? 0.0 : *std::ranges::min_element(means);
  if (!(fastest > 0.0) || !std::isfinite(fastest)) {
    fail("the delay's trace has a worker with a mean time of 0 or a censored time");
  }
  for (double& m : means) m /= fastest;
  return means;
}

/// A heterogeneity-aware code's "factors": an array of one slowdown factor per worker (as a
/// heterogeneous delay's), or "delay" to estimate them from the run's delay.
std::vector<double> code_factors(JsonReader& code, const ClusterShape& shape) {
  const auto workers = static_cast<std::size_t>(std::max(shape.workers, 0));
  if (code.has("factors") && code.raw("factors").is_string()) {
    if (code.raw("factors") != "delay") {
      code.fail_value("factors",
                      "unknown value",
                      code.raw("factors"),
                      fmt::format("\"delay\", or an array of {} numbers > 0", workers));
    }
    return delay_factors(code, shape);
  }
  return read_factors(code, workers);
}

/// Heterogeneity-aware FRC: "d" and the workers' slowdown "factors" (code_factors).
std::shared_ptr<const codes::GradientCode> make_proportional(JsonReader& code,
                                                             const ClusterShape& shape) {
  codes::ProportionalCode::Options o;
  o.workers = shape.workers;
  o.partitions = shape.partitions;
  o.d = to_int(code.integer("d", std::nullopt));
  o.factors = code_factors(code, shape);
  return std::make_shared<codes::ProportionalCode>(checked(code, shape, o));
}

/// Heterogeneity-aware cyclic code: "s" and the workers' "factors", as `proportional`'s.
std::shared_ptr<const codes::GradientCode> make_proportional_crc(JsonReader& code,
                                                                 const ClusterShape& shape) {
  // Braced: the keys are read in this order (s, then factors).
  const codes::ProportionalCyclicCode::Options o{.workers = shape.workers,
                                                 .partitions = shape.partitions,
                                                 .s = to_int(code.integer("s", std::nullopt)),
                                                 .factors = code_factors(code, shape),
                                                 .seed = shape.seed};
  return std::make_shared<codes::ProportionalCyclicCode>(checked(code, shape, o));
}

DelayMaker make_heterogeneous(JsonReader& delay,
                              const sim::WorkerLoads& worker_loads,
                              const std::filesystem::path& /*base_dir*/) {
  const std::vector<double> loads = worker_loads.expanded();
  sim::HeterogeneousDelay::Options o;
  o.shift = delay.number("shift", o.shift);
  o.rate = delay.number("rate", o.rate);
  o.tail = read_tail(delay);
  o.factors = read_factors(delay, loads.size());
  if (const Validation v = o.validate(loads.size())) {
    reject(delay, nullptr, *v);
  }
  return [=] { return std::make_unique<sim::HeterogeneousDelay>(loads, o); };
}

DelayMaker make_heterogeneous_markov(JsonReader& delay,
                                     const sim::WorkerLoads& worker_loads,
                                     const std::filesystem::path& /*base_dir*/) {
  const std::vector<double> loads = worker_loads.expanded();
  sim::HeterogeneousMarkovDelay::Options o;
  o.markov = read_markov(delay);
  o.factors = read_factors(delay, loads.size());
  return [=] { return std::make_unique<sim::HeterogeneousMarkovDelay>(loads, o); };
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
  return to_int(stopping.integer("r", std::nullopt));
}

template <typename Options>
void checked_rule(JsonReader& reader, const Options& options) {
  if (const Validation v = options.validate()) {
    reject(reader, nullptr, *v);
  }
}

RulePtr make_all(JsonReader& stopping, const CodePtr& code) {
  const sim::AllStopping::Options o{code->workers()};
  checked_rule(stopping, o);
  return std::make_shared<sim::AllStopping>(o);
}

RulePtr make_first_r(JsonReader& stopping, const CodePtr& code) {
  const sim::FirstRStopping::Options o{code->workers(), read_r(stopping, code->workers())};
  checked_rule(stopping, o);
  return std::make_shared<sim::FirstRStopping>(o);
}

RulePtr make_deadline(JsonReader& stopping, const CodePtr& code) {
  const sim::DeadlineStopping::Options o{code->workers(), stopping.number("after", std::nullopt)};
  checked_rule(stopping, o);
  return std::make_shared<sim::DeadlineStopping>(o);
}

RulePtr make_decodable(JsonReader& stopping, const CodePtr& code) {
  const sim::DecodableStopping::Options o{code};
  checked_rule(stopping, o);
  return std::make_shared<sim::DecodableStopping>(o);
}

RulePtr make_first_r_or_decodable(JsonReader& stopping, const CodePtr& code) {
  const sim::FirstROrDecodableStopping::Options o{code, read_r(stopping, code->workers())};
  checked_rule(stopping, o);
  return std::make_shared<sim::FirstROrDecodableStopping>(o);
}

RulePtr make_anytime(JsonReader& stopping, const CodePtr& code) {
  const sim::AnytimeStopping::Options o{code->workers(), stopping.number("window", std::nullopt)};
  checked_rule(stopping, o);
  return std::make_shared<sim::AnytimeStopping>(o);
}

/// Multi-message: an optional deadline "after" (absent: wait until every partition is in).
RulePtr make_multi_message(JsonReader& stopping, const CodePtr& code) {
  sim::MultiMessageStopping::Options o{code, std::nullopt};
  if (stopping.has("after")) {
    o.after = stopping.number("after", std::nullopt);
  }
  checked_rule(stopping, o);
  return std::make_shared<sim::MultiMessageStopping>(o);
}

/// The adaptive deadline: "window" (w iterations) and exactly one of "quantile" and "mads".
RulePtr make_adaptive_deadline(JsonReader& stopping, const CodePtr& code) {
  using Statistic = sim::AdaptiveDeadlineOptions::Statistic;
  const bool quantile = stopping.has("quantile");
  if (quantile == stopping.has("mads")) {
    stopping.fail(quantile ? "mads" : "quantile",
                  "the adaptive deadline takes one statistic; expected exactly one of 'quantile' "
                  "(a number in (0, 1]) and 'mads' (a number >= 0)");
  }
  sim::AdaptiveDeadlineOptions o;
  o.workers = code->workers();
  o.window = to_int(stopping.integer("window", std::nullopt));
  o.statistic = quantile ? Statistic::kQuantile : Statistic::kMedianMads;
  if (quantile) {
    o.quantile = stopping.number("quantile", std::nullopt);
  } else {
    o.mads = stopping.number("mads", std::nullopt);
  }
  checked_rule(stopping, o);
  return std::make_shared<sim::AdaptiveDeadlineStopping>(o);
}

/// The adaptive r: "window" (w iterations, 10), "r_min" (1), "r_max" (n) and "slack" (0.5).
RulePtr make_adaptive_r(JsonReader& stopping, const CodePtr& code) {
  sim::AdaptiveROptions o;
  o.workers = code->workers();
  o.window = to_int(stopping.integer("window", 10));
  o.r_min = to_int(stopping.integer("r_min", 1));
  o.r_max = to_int(stopping.integer("r_max", code->workers()));
  o.slack = stopping.number("slack", 0.5);
  checked_rule(stopping, o);
  return std::make_shared<sim::AdaptiveRStopping>(o);
}

/// An update rule of the asynchronous loop: "k" (1 ≤ K ≤ n) and "staleness_step".
RulePtr make_update_rule(JsonReader& stopping, const CodePtr& code, sim::UpdateMode mode) {
  const int k = to_int(stopping.integer("k", std::nullopt));
  const auto step =
      stopping.choice("staleness_step", "staleness step", {"constant", "inverse"}, "constant");
  const sim::UpdateRule::Options o{
      code->workers(),
      k,
      mode,
      step == "inverse" ? sim::StalenessStep::kInverse : sim::StalenessStep::kConstant};
  checked_rule(stopping, o);
  return std::make_shared<sim::UpdateRule>(o);
}

}  // namespace

namespace {

/// Per-worker delay, arrival and load vectors of the simulation: about 16 doubles per worker.
double per_worker_bytes(double workers) { return 128.0 * workers; }

/// Codes kept as supports (d partitions per worker), with a dense B only when n·k ≤ 2^24.
CodeFootprint support_footprint(double workers, double partitions, double d) {
  const double dense = workers * partitions <= 0x1p24 ? 8.0 * workers * partitions : 0.0;
  return {per_worker_bytes(workers) + 64.0 * partitions + 16.0 * workers * std::max(d, 1.0) + dense,
          partitions,
          ""};
}

/// B (n × k doubles), and a decode's B_Kᵀ and its decomposition of the same size.
CodeFootprint dense_footprint(double workers, double partitions) {
  return {per_worker_bytes(workers) + 3.0 * 8.0 * workers * partitions, partitions, ""};
}

}  // namespace

CodeFootprint code_footprint(
    std::string_view kind, double workers, double partitions, double d, bool compact) {
  // The one place that knows each code's storage: keyed by the factory row's name.
  if ((kind == "uncoded" || kind == "frc") && compact) {
    return {0.0, partitions, ""};  // GradientCode::Compact: a few integers
  }
  if (kind == "uncoded" || kind == "frc" || kind == "dynamic_frc") {
    return support_footprint(workers, partitions, d);
  }
  if (kind == "expander" && d > 0.0) {
    CodeFootprint f = dense_footprint(workers, 2.0 * workers / d);
    f.partitions_formula = "2·workers/d";
    return f;
  }
  return dense_footprint(workers, partitions);
}

const std::vector<FactoryRow<CodeFactory>>& code_factories() {
  static const std::vector<FactoryRow<CodeFactory>> table = {
      {"bgc",
       "Bernoulli gradient code: worker i holds partition j with probability d/k (one-step "
       "decoder)",
       {{"d", ""}},
       make_bgc},
      {"crc",
       "cyclic repetition code: worker i holds partitions i..i+s, exact from any n - s workers",
       {{"s", ""}},
       make_crc},
      {"cyclic_mds",
       "real cyclic MDS code of redundancy s (>= s when needed), exact from any n - s workers",
       {{"s", ""}},
       make_cyclic_mds},
      {"dynamic_frc",
       "FRC with dynamic clustering: every K iterations the groups are re-formed so that the "
       "workers late in those K iterations fall in different groups (data movement free)",
       {{"d", ""}, {"every", "10"}},
       make_dynamic_frc},
      {"expander",
       "expander graph code: workers are the edges of a random d-regular graph on k = 2n/d "
       "partitions",
       {{"d", ""}},
       make_expander},
      {"frc",
       "fractional repetition code: n/d groups of d workers holding the same d partitions",
       {{"d", ""}},
       make_frc},
      {"proportional",
       "heterogeneity-aware FRC: groups of d workers of similar speed, each group holding "
       "partitions in proportion to its speed (1/factor); factors \"delay\": the run's delay's "
       "own, or a trace's mean time per worker over the fastest's",
       {{"d", ""}, {"factors", ""}},
       make_proportional},
      {"proportional_crc",
       "heterogeneity-aware cyclic code: each worker holds partitions in proportion to its speed "
       "(1/factor), laid cyclically so that each is held by s + 1 workers; exact from any n - s "
       "workers; factors as proportional's",
       {{"s", ""}, {"factors", ""}},
       make_proportional_crc},
      {"sgc",
       "stochastic gradient code: d partitions per worker, balanced random assignment "
       "(one-step decoder, optional straggle probability p)",
       {{"d", ""}, {"p", ""}},
       make_sgc},
      {"uncoded", "one partition per worker, no redundancy", {}, make_uncoded},
  };
  return table;
}

namespace {

std::string number_text(double x) { return fmt::format("{}", x); }
std::string tail_text(sim::TailScaling t) { return t == sim::TailScaling::kLoad ? "load" : "none"; }

/// The keys of a load-scaled shift plus a two-parameter tail (gamma, lognormal, pareto,
/// weibull), with their defaults.
std::vector<KeyDoc> shift_tail_keys(double shift,
                                    const char* first,
                                    double first_value,
                                    const char* second,
                                    double second_value,
                                    sim::TailScaling tail) {
  return {{"shift", number_text(shift)},
          {first, number_text(first_value)},
          {second, number_text(second_value)},
          {"tail", tail_text(tail)}};
}

std::vector<KeyDoc> bimodal_keys() {
  const sim::BimodalDelay::Options bi;
  return {{"shift", number_text(bi.shift)},
          {"rate", number_text(bi.rate)},
          {"tail", tail_text(bi.tail)},
          {"slow_probability", number_text(bi.slow_probability)},
          {"slowdown", number_text(bi.slowdown)}};
}

std::vector<KeyDoc> heterogeneous_keys() {
  const sim::HeterogeneousDelay::Options he;
  return {{"shift", number_text(he.shift)},
          {"rate", number_text(he.rate)},
          {"tail", tail_text(he.tail)},
          {"factors", ""}};
}

/// The keys of the normal/slow Markov chain, with their defaults; `factors` adds the
/// per-worker factors of heterogeneous_markov.
std::vector<KeyDoc> markov_keys(bool factors) {
  const sim::MarkovDelay::Options ma;
  std::vector<KeyDoc> keys = {{"shift", number_text(ma.shift)},
                              {"rate", number_text(ma.rate)},
                              {"slow_shift", number_text(ma.slow_shift)},
                              {"slow_rate", number_text(ma.slow_rate)},
                              {"to_slow", number_text(ma.to_slow)},
                              {"to_normal", number_text(ma.to_normal)},
                              {"tail", tail_text(ma.tail)}};
  if (factors) {
    keys.push_back({"factors", ""});
  }
  return keys;
}

}  // namespace

const std::vector<FactoryRow<DelayFactory>>& delay_factories() {
  const sim::ShiftedExponentialDelay::Options se;
  const sim::ParetoDelay::Options pa;
  const sim::LogNormalDelay::Options ln;
  const sim::GammaDelay::Options ga;
  const sim::WeibullDelay::Options wb;
  static const std::vector<FactoryRow<DelayFactory>> table = {
      {"bimodal",
       "shifted exponential slowed by a factor slowdown with probability slow_probability",
       bimodal_keys(),
       make_bimodal},
      {"gamma",
       "load-scaled shift plus a Gamma(shape, scale) tail",
       shift_tail_keys(ga.shift, "shape", ga.shape, "scale", ga.scale, ga.tail),
       make_gamma},
      {"heterogeneous",
       "shifted exponential times a fixed slowdown factor per worker",
       heterogeneous_keys(),
       make_heterogeneous},
      {"heterogeneous_markov",
       "persistent stragglers on heterogeneous workers: a fixed factor per worker times the "
       "markov model's time",
       markov_keys(/*factors=*/true),
       make_heterogeneous_markov},
      {"lognormal",
       "load-scaled shift plus a log-normal tail: log of the tail ~ N(log_mean, log_sd^2)",
       shift_tail_keys(ln.shift, "log_mean", ln.log_mean, "log_sd", ln.log_sd, ln.tail),
       make_lognormal},
      {"markov",
       "persistent stragglers: per-worker normal/slow Markov chain (to_slow, to_normal), "
       "shifted exponential per state",
       markov_keys(/*factors=*/false),
       make_markov},
      {"pareto",
       "load-scaled shift plus a Pareto(scale, shape) tail (heavy-tailed)",
       shift_tail_keys(pa.shift, "scale", pa.scale, "shape", pa.shape, pa.tail),
       make_pareto},
      {"shifted_exponential",
       "T = load*shift + s(load)*Exp(1)/rate; tail load (Model A) or none (Model B)",
       {{"shift", number_text(se.shift)},
        {"rate", number_text(se.rate)},
        {"tail", tail_text(se.tail)}},
       make_shifted_exponential},
      {"trace",
       "measured per-worker times from a CSV file (iteration,worker,seconds or worker,seconds), "
       "replayed in order (cycle), resampled by rows (bootstrap), by blocks of consecutive rows "
       "(block) or per worker (empirical)",
       {{"path", ""},
        {"mode", "cycle"},
        {"block", "auto"},
        {"start", "0"},
        {"tail", tail_text(sim::TailScaling::kLoad)}},
       make_trace},
      {"weibull",
       "load-scaled shift plus a Weibull(shape, scale) tail",
       shift_tail_keys(wb.shift, "shape", wb.shape, "scale", wb.scale, wb.tail),
       make_weibull},
  };
  return table;
}

namespace {

// "classes": C ≥ 2, by default the data's (the largest label + 1).
int read_classes(JsonReader& loss, int data_classes, models::SoftmaxNetworkOptions& o) {
  o.classes = to_int(loss.integer("classes", data_classes));
  if (const auto v = o.validate()) {
    reject(loss, nullptr, *v);
  }
  return o.classes;
}

std::shared_ptr<const models::LossModel> make_softmax(JsonReader& loss, int data_classes) {
  models::SoftmaxNetworkOptions o;
  read_classes(loss, data_classes, o);
  return models::make_softmax_network(o);
}

std::shared_ptr<const models::LossModel> make_mlp(JsonReader& loss, int data_classes) {
  models::SoftmaxNetworkOptions o;
  o.bias = true;
  const nlohmann::json hidden = loss.raw_or("hidden", nlohmann::json::array({128}));
  const bool integers = hidden.is_array() && std::all_of(hidden.begin(), hidden.end(), [](auto& h) {
                          return h.is_number_integer();
                        });
  if (!integers || hidden.empty()) {
    loss.fail_value("hidden",
                    "not a list of layer widths",
                    hidden,
                    "a non-empty list of integer widths >= 1 (e.g. [128]; \"softmax\" for no "
                    "hidden layer)");
  }
  for (const auto& h : hidden) {
    o.hidden.push_back(to_int(h.get<std::int64_t>()));
  }
  const auto activation = loss.choice("activation", "activation", {"relu", "tanh"}, "relu");
  o.activation = activation == "relu" ? models::Activation::kRelu : models::Activation::kTanh;
  read_classes(loss, data_classes, o);
  return models::make_softmax_network(o);
}

}  // namespace

const std::vector<FactoryRow<LossFactory>>& loss_factories() {
  static const std::vector<FactoryRow<LossFactory>> table = {
      {"least_squares",
       "1/2 (a'x - b)^2 plus l2/2 |x|^2; test metric mse",
       {},
       [](JsonReader& /*loss*/, int /*classes*/) {
         return std::shared_ptr<const models::LossModel>(models::make_least_squares_loss());
       }},
      {"logistic",
       "log(1 + exp(-b a'x)) plus l2/2 |x|^2, labels mapped to -1/+1; test accuracy and AUC",
       {},
       [](JsonReader& /*loss*/, int /*classes*/) {
         return std::shared_ptr<const models::LossModel>(models::make_logistic_loss());
       }},
      {"mlp",
       "softmax network: hidden layers of relu or tanh units with biases, cross-entropy on "
       "labels 0..classes-1, seeded He/Glorot start; non-convex; test accuracy and confusion",
       {{"hidden", "[128]"}, {"activation", "relu"}, {"classes", "max label + 1"}},
       make_mlp},
      {"softmax",
       "multiclass softmax regression: cross-entropy of W'a on labels 0..classes-1 plus l2/2 "
       "|W|^2, x = W (features x classes, column-major); test accuracy and confusion",
       {{"classes", "max label + 1"}},
       make_softmax},
  };
  return table;
}

const std::vector<FactoryRow<StoppingFactory>>& stopping_factories() {
  static const std::vector<FactoryRow<StoppingFactory>> table = {
      {"adaptive_deadline",
       "a deadline from the last window iterations' arrival times: their quantile, or median + "
       "mads MADs (simulated clock; threads and MPI follow the injected delays)",
       {{"window", ""}, {"quantile", ""}, {"mads", ""}},
       make_adaptive_deadline},
      {"adaptive_r",
       "stop at the r-th arrival, r the most workers whose mean arrival over the last window "
       "iterations is within (1 + slack) of the r_min-th's (grows by one per window; simulated "
       "clock; threads and MPI follow the injected delays)",
       {{"window", "10"}, {"r_min", "1"}, {"r_max", "n"}, {"slack", "0.5"}},
       make_adaptive_r},
      {"all", "wait for every worker", {}, make_all},
      {"anytime",
       "anytime minibatch: every worker computes for window seconds and sends the rows it "
       "finished; the master weights by counts (uncoded, simulated clock)",
       {{"window", ""}},
       make_anytime},
      {"deadline",
       "stop after seconds past the broadcast (or once every worker is in)",
       {{"after", ""}},
       make_deadline},
      {"decodable", "stop once the workers heard decode exactly", {}, make_decodable},
      {"first_r",
       "stop at the r-th arrival; r or fraction (r = ceil(fraction n))",
       {{"r", ""}, {"fraction", ""}},
       make_first_r},
      {"first_r_or_decodable",
       "the earlier of the r-th arrival and exact decodability (ErasureHead's rule)",
       {{"r", ""}, {"fraction", ""}},
       make_first_r_or_decodable},
      {"multi_message",
       "every worker sends each partition's gradient as it finishes it; stop once every "
       "partition is in, or at after seconds (simulated clock)",
       {{"after", "none"}},
       make_multi_message},
      {"k_async",
       "asynchronous: update after every k gradients, new x to those k workers only (k = 1: "
       "async SGD)",
       {{"k", ""}, {"staleness_step", "constant"}},
       [](JsonReader& r, const CodePtr& c) {
         return make_update_rule(r, c, sim::UpdateMode::kKAsync);
       }},
      {"k_batch_async",
       "asynchronous: update after every k gradients; workers fetch x and restart at once",
       {{"k", ""}, {"staleness_step", "constant"}},
       [](JsonReader& r, const CodePtr& c) {
         return make_update_rule(r, c, sim::UpdateMode::kKBatchAsync);
       }},
      {"k_batch_sync",
       "update after the first k gradients computed at x (workers restart at the same x "
       "until then)",
       {{"k", ""}, {"staleness_step", "constant"}},
       [](JsonReader& r, const CodePtr& c) {
         return make_update_rule(r, c, sim::UpdateMode::kKBatchSync);
       }},
  };
  return table;
}

const std::vector<ChoiceDoc>& optimizer_docs() {
  static const std::vector<ChoiceDoc> table = {
      {"gd",
       "gradient descent x <- x - step_t g (default); batch: rows per partition of a "
       "stochastic gradient; schedule: step_t (constant, inverse_t, cosine); momentum: "
       "heavy-ball m in [0, 1)",
       {{"step", ""},
        {"iterations", ""},
        {"batch", ""},
        {"schedule", "constant"},
        {"momentum", "0"},
        {"start", "zero"}}},
      {"nesterov",
       "Nesterov's accelerated gradient",
       {{"step", ""},
        {"iterations", ""},
        {"batch", ""},
        {"schedule", "constant"},
        {"start", "zero"}}},
      {"erasurehead_agd",
       "the accelerated gradient of ErasureHead's reference code (theta = 2/(t+2), gradient at "
       "the iterate)",
       {{"step", ""},
        {"iterations", ""},
        {"batch", ""},
        {"schedule", "constant"},
        {"start", "zero"}}},
  };
  return table;
}

const std::vector<ChoiceDoc>& generator_docs() {
  // Defaults from the generators' own options structs, so the listing follows them.
  const models::AmazonLikeOptions amazon;
  const models::CovtypeLikeOptions covtype;
  const models::KcHousingLikeOptions kc;
  const models::GaussianMixtureOptions mixture;
  const models::LinearRegressionOptions regression;
  const auto text = [](auto x) { return fmt::format("{}", x); };
  static const std::vector<ChoiceDoc> table = {
      {"amazon_like",
       "sparse one-hot table shaped like Amazon Employee Access (logistic)",
       {{"rows", text(amazon.rows)},
        {"features", text(amazon.features)},
        {"positive_fraction", text(amazon.positive_fraction)},
        {"storage", "sparse"},
        {"test_fraction", "0.2"}}},
      {"covtype_like",
       "sparse one-hot table shaped like Forest Covertype (logistic)",
       {{"rows", text(covtype.rows)},
        {"features", text(covtype.features)},
        {"positive_fraction", text(covtype.positive_fraction)},
        {"storage", "sparse"},
        {"test_fraction", "0.2"}}},
      {"gaussian_mixture",
       "dense two-class Gaussian mixture (logistic)",
       {{"rows", ""},
        {"features", ""},
        {"separation", text(mixture.separation)},
        {"condition", text(mixture.condition)},
        {"test_fraction", "0.2"}}},
      {"kc_housing_like",
       "sparse one-hot table shaped like KC housing (least squares)",
       {{"rows", text(kc.rows)},
        {"features", text(kc.features)},
        {"noise", text(kc.noise)},
        {"storage", "sparse"},
        {"test_fraction", "0.2"}}},
      {"linear_regression",
       "dense planted linear model plus Gaussian noise (least squares)",
       {{"rows", ""},
        {"features", ""},
        {"noise", text(regression.noise)},
        {"condition", text(regression.condition)},
        {"test_fraction", "0.2"}}},
  };
  return table;
}

const std::vector<ChoiceDoc>& data_source_docs() {
  const models::FashionMnistOptions fashion;
  static const std::vector<ChoiceDoc> table = {
      {"csv",
       "a CSV file with a header line; the label in the last column (label_column: a name or an "
       "index, negative from the end)",
       {{"path", ""},
        {"test_path", ""},
        {"test_fraction", "0.2"},
        {"header", "true"},
        {"label_column", "-1"}}},
      {"fashion_mnist",
       "two classes (or \"all\" ten, labels 0-9) of Fashion-MNIST's IDX files (Debian package "
       "dataset-fashion-mnist)",
       {{"dir", fashion.dir},
        {"classes", fmt::format("[{}, {}]", fashion.negative_class, fashion.positive_class)},
        {"scale", "true"},
        {"rows", "0"},
        {"test_rows", "0"}}},
      {"libsvm",
       "a LIBSVM file (label index:value ...); features 0 takes the file's largest index",
       {{"path", ""},
        {"test_path", ""},
        {"test_fraction", "0.2"},
        {"features", "0"},
        {"storage", "dense"}}},
  };
  return table;
}

}  // namespace stragglersim::experiments
