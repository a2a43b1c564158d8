// The delay table (docs/plugins.md): one row per delay model, its factory reading the delay
// object into the model's Options (a trace its file), with the keys' defaults from the Options.
#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "experiments/config/config_error.h"
#include "experiments/config/factories.h"
#include "experiments/config/factory_support.h"
#include "sim/delays/bimodal_delay.h"
#include "sim/delays/delay_model.h"
#include "sim/delays/fixed_delay.h"
#include "sim/delays/gamma_delay.h"
#include "sim/delays/heterogeneous_delay.h"
#include "sim/delays/heterogeneous_markov_delay.h"
#include "sim/delays/lognormal_delay.h"
#include "sim/delays/markov_delay.h"
#include "sim/delays/pareto_delay.h"
#include "sim/delays/trace_delay.h"
#include "sim/delays/universal_delay.h"
#include "sim/delays/weibull_delay.h"

namespace stragglersim::experiments {

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

namespace {

sim::TailScaling read_tail(JsonReader& delay) {
  return delay.choice("tail", "tail scaling", {"load", "none"}, "load") == "load"
             ? sim::TailScaling::kLoad
             : sim::TailScaling::kNone;
}

DelayMaker make_shifted_exponential(JsonReader& delay,
                                    const sim::WorkerLoads& loads,
                                    const std::filesystem::path& /*base_dir*/) {
  sim::ShiftedExponentialDelay::Options o;
  o.shift = delay.number("shift", o.shift);
  o.rate = delay.number("rate", o.rate);
  o.tail = read_tail(delay);
  checked(delay, o);
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
  return checked(delay, o);
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
  checked(delay, o);
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
  return checked(delay, o);
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
  checked(delay, o);
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

/// A violated constraint whose field is a path below a key of `reader` ("times/3", "rates/0/1")
/// or an element of one (Got::kElement), reported at that value's own JSON pointer with the
/// value as "got"; any other at its key (reject).
[[noreturn]] void reject_inside(JsonReader& reader, const Violation& v) {
  const std::size_t slash = v.field.find('/');
  if (slash == std::string::npos && v.got != Violation::Got::kElement) {
    reject(reader, nullptr, v);
  }
  const std::string key = v.field.substr(0, slash);
  const std::string rest =
      slash == std::string::npos ? fmt::format("/{}", v.index) : v.field.substr(slash);
  nlohmann::json got = reader.raw(key).at(nlohmann::json::json_pointer(rest));
  if (v.got == Violation::Got::kSize) {
    got = got.size();
  }
  throw ConfigError(fmt::format("{}:{}{}: {}; got {}; expected {}",
                                reader.file(),
                                reader.pointer_of(key),
                                rest,
                                v.problem,
                                got.dump(),
                                v.expected));
}

/// An array of numbers at `key` (JSON types here; values by the Options), each element that is
/// not a number reported at its own pointer.
std::vector<double> read_numbers(JsonReader& reader,
                                 std::string_view key,
                                 const std::string& expected) {
  const nlohmann::json& raw = reader.raw(key);
  if (!raw.is_array()) {
    reader.fail_value(key, "wrong type", raw, expected);
  }
  std::vector<double> out;
  for (std::size_t i = 0; i < raw.size(); ++i) {
    if (!raw[i].is_number()) {
      reject_inside(
          reader,
          Violation{std::string(key), "not a number", expected, Violation::Got::kElement, i});
    }
    out.push_back(raw[i].get<double>());
  }
  return out;
}

/// "times": an array of τ_i, or the formula "sqrt" or "linear"; "scale" multiplies either.
DelayMaker make_fixed(JsonReader& delay,
                      const sim::WorkerLoads& worker_loads,
                      const std::filesystem::path& /*base_dir*/) {
  const std::vector<double> loads = worker_loads.expanded();
  const std::string expected = fmt::format(
      "an array of {} numbers > 0 (one time per worker), \"sqrt\" or \"linear\"", loads.size());
  sim::FixedDelay::Options o;
  if (!delay.has("times")) {
    delay.fail("times", "missing required key; expected " + expected);
  }
  if (delay.raw("times").is_string()) {
    const std::string formula =
        delay.choice("times", "times formula", {"linear", "sqrt"}, std::nullopt);
    o.formula =
        formula == "sqrt" ? sim::FixedDelay::Formula::kSqrt : sim::FixedDelay::Formula::kLinear;
  } else {
    o.times = read_numbers(delay, "times", expected);
  }
  o.scale = delay.number("scale", o.scale);
  if (const Validation v = o.validate(loads.size())) {
    reject_inside(delay, *v);
  }
  return [=] { return std::make_unique<sim::FixedDelay>(loads, o); };
}

/// "markov": {"powers": [...], "rates": [[...]] or "switch_rate": q}.
sim::PowerChain read_power_chain(JsonReader& markov) {
  sim::PowerChain chain;
  chain.powers = read_numbers(markov, "powers", "an array of powers >= 0, some > 0");
  if (markov.has("rates") && markov.has("switch_rate")) {
    markov.fail_value(
        "switch_rate", "both rates and switch_rate", markov.raw("switch_rate"), "one of them");
  }
  if (markov.has("rates")) {
    const std::size_t m = chain.powers.size();
    const std::string square = fmt::format("an array of {} arrays of {} rates >= 0", m, m);
    const nlohmann::json& raw = markov.raw("rates");
    if (!raw.is_array()) {
      markov.fail_value("rates", "wrong type", raw, square);
    }
    for (std::size_t a = 0; a < raw.size(); ++a) {
      if (!raw[a].is_array()) {
        reject_inside(markov, Violation{fmt::format("rates/{}", a), "wrong type", square});
      }
      std::vector<double> row;
      for (std::size_t b = 0; b < raw[a].size(); ++b) {
        if (!raw[a][b].is_number()) {
          reject_inside(markov,
                        Violation{fmt::format("rates/{}/{}", a, b), "not a number", square});
        }
        row.push_back(raw[a][b].get<double>());
      }
      chain.rates.push_back(std::move(row));
    }
  } else {
    chain.switch_rate = markov.number("switch_rate", chain.switch_rate);
  }
  if (const Validation v = chain.validate()) {
    reject_inside(markov, *v);
  }
  return chain;
}

/// "speeds": an array of c_i, or "sqrt" (c_i = 1/√i, i = 1..n); absent: every c_i = 1.
std::vector<double> read_speeds(JsonReader& delay, std::size_t workers) {
  const std::string expected =
      fmt::format("an array of {} numbers > 0 (one speed per worker) or \"sqrt\"", workers);
  if (!delay.has("speeds")) {
    return {};
  }
  if (delay.raw("speeds").is_string()) {
    (void)delay.choice("speeds", "speeds formula", {"sqrt"}, std::nullopt);
    std::vector<double> speeds(workers);
    for (std::size_t i = 0; i < workers; ++i) {
      speeds[i] = 1.0 / std::sqrt(static_cast<double>(i + 1));
    }
    return speeds;
  }
  return read_numbers(delay, "speeds", expected);
}

/// "powers": {"file": path} (read once, here, so that a bad file fails the config) or "markov";
/// then "speeds".
DelayMaker make_universal(JsonReader& delay,
                          const sim::WorkerLoads& worker_loads,
                          const std::filesystem::path& base_dir) {
  const std::vector<double> loads = worker_loads.expanded();
  sim::UniversalDelay::Options o;
  const bool file = delay.has("powers");
  if (file == delay.has("markov")) {
    delay.fail(file ? "markov" : "powers",
               file ? "both \"powers\" and \"markov\"; expected one source of compute powers"
                    : "missing required key; expected \"powers\": {\"file\": ...} or \"markov\": "
                      "{\"powers\": [...], ...}");
  }
  if (file) {
    JsonReader powers = delay.object("powers");
    const std::string path = powers.string("file", std::nullopt);
    const std::filesystem::path full =
        std::filesystem::path(path).is_absolute() ? std::filesystem::path(path) : base_dir / path;
    try {
      o.trace = std::make_shared<const sim::PowerFile>(
          sim::read_power_file(full.string(), static_cast<int>(loads.size())));
    } catch (const sim::TraceFileError& e) {
      powers.fail("file", e.what());
    }
    powers.finish({"file"});
    delay.merge("powers", powers);
  } else {
    JsonReader markov = delay.object("markov");
    o.chain = read_power_chain(markov);
    markov.finish({"powers", "rates", "switch_rate"});
    delay.merge("markov", markov);
  }
  o.speeds = read_speeds(delay, loads.size());
  if (const Validation v = o.validate(loads.size())) {
    reject_inside(delay, *v);
  }
  return [=] { return std::make_unique<sim::UniversalDelay>(loads, o); };
}

}  // namespace

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

/// The rows whose descriptions and keys are long (delay_factories stays one screen).
FactoryRow<DelayFactory> fixed_row() {
  return {"fixed",
          "no randomness: worker i always takes scale*times[i]*load (times an array, or \"sqrt\": "
          "scale*sqrt(i), \"linear\": scale*i, i = 1..n); the fixed computation model",
          {{"times", ""}, {"scale", "1"}},
          make_fixed};
}

FactoryRow<DelayFactory> trace_row() {
  return {"trace",
          "measured per-worker times from a CSV file (iteration,worker,seconds or worker,seconds), "
          "replayed in order (cycle), resampled by rows (bootstrap), by blocks of consecutive rows "
          "(block) or per worker (empirical)",
          {{"path", ""},
           {"mode", "cycle"},
           {"block", "auto"},
           {"start", "0"},
           {"tail", tail_text(sim::TailScaling::kLoad)}},
          make_trace};
}

/// Its durations follow the clock: the real-time backends cannot give them.
FactoryRow<DelayFactory> universal_row() {
  return {"universal",
          "compute power varying with the clock, a computation of load l ending when the power's "
          "integral reaches l: powers from a CSV file (time,worker,power, repeated with its "
          "period) or a Markov chain per worker (markov: powers, rates or switch_rate), times "
          "speeds (an array, or \"sqrt\": 1/sqrt(i)); the universal computation model (simulated "
          "clock only)",
          {{"powers", ""}, {"markov", ""}, {"speeds", ""}},
          make_universal,
          {.needs_simulated_clock = Flag{{.why = "its durations follow the simulated clock"}}}};
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
      fixed_row(),
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
      trace_row(),
      universal_row(),
      {"weibull",
       "load-scaled shift plus a Weibull(shape, scale) tail",
       shift_tail_keys(wb.shift, "shape", wb.shape, "scale", wb.scale, wb.tail),
       make_weibull},
  };
  return table;
}

}  // namespace stragglersim::experiments
