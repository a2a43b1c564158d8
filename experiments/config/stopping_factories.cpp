// The stopping-rule table (docs/plugins.md): one row per rule, its factory reading the stopping
// object into the rule's Options, and what the rule requires of the rest of the run
// (requirements.h). Rules defined elsewhere (a test's) join the table with
// register_stopping_rule.
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "experiments/config/factories.h"
#include "experiments/config/factory_support.h"
#include "experiments/config/row_registry.h"
#include "sim/multi_message.h"

namespace stragglersim::experiments {
namespace {

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

RulePtr make_all(JsonReader& stopping, const CodePtr& code) {
  const sim::AllStopping::Options o{code->workers()};
  checked(stopping, o);
  return std::make_shared<sim::AllStopping>(o);
}

RulePtr make_first_r(JsonReader& stopping, const CodePtr& code) {
  const sim::FirstRStopping::Options o{code->workers(), read_r(stopping, code->workers())};
  checked(stopping, o);
  return std::make_shared<sim::FirstRStopping>(o);
}

RulePtr make_deadline(JsonReader& stopping, const CodePtr& code) {
  const sim::DeadlineStopping::Options o{code->workers(), stopping.number("after", std::nullopt)};
  checked(stopping, o);
  return std::make_shared<sim::DeadlineStopping>(o);
}

RulePtr make_decodable(JsonReader& stopping, const CodePtr& code) {
  const sim::DecodableStopping::Options o{code};
  checked(stopping, o);
  return std::make_shared<sim::DecodableStopping>(o);
}

RulePtr make_first_r_or_decodable(JsonReader& stopping, const CodePtr& code) {
  const sim::FirstROrDecodableStopping::Options o{code, read_r(stopping, code->workers())};
  checked(stopping, o);
  return std::make_shared<sim::FirstROrDecodableStopping>(o);
}

RulePtr make_anytime(JsonReader& stopping, const CodePtr& code) {
  const sim::AnytimeStopping::Options o{code->workers(), stopping.number("window", std::nullopt)};
  checked(stopping, o);
  return std::make_shared<sim::AnytimeStopping>(o);
}

/// Multi-message: an optional deadline "after" (absent: wait until every partition is in).
RulePtr make_multi_message(JsonReader& stopping, const CodePtr& code) {
  sim::MultiMessageStopping::Options o{code, std::nullopt};
  if (stopping.has("after")) {
    o.after = stopping.number("after", std::nullopt);
  }
  checked(stopping, o);
  return std::make_shared<sim::MultiMessageStopping>(o);
}

/// DropCompute (Giladi et al., NeurIPS 2023): the multi-message rule with the deadline
/// "threshold" τ (required, > 0): every worker sends each of its micro-batches (partitions) as it
/// finishes it and stops computing at τ.
RulePtr make_drop_compute(JsonReader& stopping, const CodePtr& code) {
  const double threshold = stopping.number("threshold", std::nullopt);
  if (const Validation v = options_check::positive("threshold", threshold)) {
    reject(stopping, nullptr, *v);
  }
  sim::MultiMessageStopping::Options o{code, threshold};
  checked(stopping, o);
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
  checked(stopping, o);
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
  checked(stopping, o);
  return std::make_shared<sim::AdaptiveRStopping>(o);
}

/// An update rule of the asynchronous loop: "k" (1 ≤ K ≤ n) and "staleness_step".
RulePtr make_update_rule(JsonReader& stopping, const CodePtr& code, sim::UpdateMode mode) {
  const int k = to_int(stopping.integer("k", std::nullopt));
  const auto step =
      stopping.choice("staleness_step", "staleness step", {"constant", "inverse"}, "constant");
  sim::UpdateRule::Options o;
  o.workers = code->workers();
  o.k = k;
  o.mode = mode;
  o.step = step == "inverse" ? sim::StalenessStep::kInverse : sim::StalenessStep::kConstant;
  checked(stopping, o);
  return std::make_shared<sim::UpdateRule>(o);
}

/// "sampling": "own" (the worker's partition, the default) or "shared" (a partition drawn per
/// computation: the homogeneous setting of the time-optimal methods' papers).
sim::Sampling read_sampling(JsonReader& stopping) {
  return stopping.choice("sampling", "sampling", {"own", "shared"}, "own") == "shared"
             ? sim::Sampling::kShared
             : sim::Sampling::kOwn;
}

/// MindFlayer's "cutoffs": one number for every worker, or an array of one per worker.
std::vector<double> read_cutoffs(JsonReader& stopping, int workers) {
  if (!stopping.has("cutoffs")) {
    stopping.fail("cutoffs",
                  "missing required key; expected a cut-off in seconds > 0, or an array of one "
                  "per worker");
  }
  const auto& raw = stopping.raw("cutoffs");
  const std::string expected =
      fmt::format("a number > 0, or an array of {} numbers > 0 (seconds, one per worker)", workers);
  if (raw.is_number()) {
    const double t = raw.get<double>();
    if (!(t > 0.0) || !std::isfinite(t)) {
      stopping.fail_value("cutoffs", "out of range", raw, expected);
    }
    return std::vector<double>(static_cast<std::size_t>(workers), t);
  }
  if (!raw.is_array()) {
    stopping.fail_value("cutoffs", "wrong shape", raw, expected);
  }
  std::vector<double> cutoffs;
  for (const auto& t : raw) {
    if (!t.is_number()) {
      stopping.fail_value("cutoffs", "bad cut-off", t, expected);
    }
    cutoffs.push_back(t.get<double>());
  }
  return cutoffs;
}

/// A time-optimal method (docs/model.md §4 "Time-optimal methods"): the keys each one takes.
RulePtr make_time_optimal(JsonReader& stopping, const CodePtr& code, sim::UpdateMode mode) {
  sim::UpdateRule::Options o;
  o.workers = code->workers();
  o.mode = mode;
  const bool batch = mode == sim::UpdateMode::kRennala || mode == sim::UpdateMode::kMalenia ||
                     mode == sim::UpdateMode::kMindFlayer;
  o.k = batch ? to_int(stopping.integer("batch", std::nullopt)) : 1;
  if (mode == sim::UpdateMode::kRingmaster && stopping.has("max_delay")) {
    const std::int64_t r = stopping.integer("max_delay", std::nullopt);
    if (r < 1) {
      stopping.fail_value("max_delay", "out of range", r, "an integer >= 1 (R; absent: no limit)");
    }
    o.max_delay = static_cast<std::uint64_t>(r);
  }
  if (mode == sim::UpdateMode::kMindFlayer) {
    o.cutoffs = read_cutoffs(stopping, code->workers());
  }
  if (mode != sim::UpdateMode::kRescaledAsync) {
    o.stop_stale = stopping.boolean("stop_stale", false);
  }
  if (mode != sim::UpdateMode::kMalenia && mode != sim::UpdateMode::kRescaledAsync) {
    o.sampling = read_sampling(stopping);
  }
  if (!batch) {
    const auto step =
        stopping.choice("staleness_step", "staleness step", {"constant", "inverse"}, "constant");
    o.step = step == "inverse" ? sim::StalenessStep::kInverse : sim::StalenessStep::kConstant;
  }
  if (o.max_delay == std::nullopt && mode == sim::UpdateMode::kRingmaster && o.stop_stale) {
    stopping.fail_value("stop_stale",
                        "has nothing to stop without a delay threshold",
                        true,
                        "false, or a max_delay R");
  }
  checked(stopping, o);
  return std::make_shared<sim::UpdateRule>(o);
}

/// An update rule of the asynchronous loop (docs/model.md §4 "Asynchronous updates") runs the
/// asynchronous loop: data, the uncoded code, gradient descent on the simulated clock (a network
/// block applies to its pushes), without a rescale or straggler policy (neither is defined
/// there).
Requirements asynchronous(const std::string& name) {
  return {
      .subject = fmt::format("the asynchronous rule '{}'", name),
      .needs_data = Flag{{.accepted = "a data object (delay-only runs are synchronous only)"}},
      .codes = OneOf{{"uncoded"}, {}},
      .needs_simulated_clock = Flag{},
      .optimizer = OneOf{{"gd"}, {.what = "gradient descent"}},
      .straggler_policy = OneOf{{"cancel"}, {}},
      .rescale = OneOf{{"none"}, {.why = "it scales by n/K itself"}},
  };
}

/// The anytime rule (docs/model.md §4 "Anytime minibatch") runs on the simulated clock with data
/// and the uncoded code; its window replaces the minibatch, the straggler policy and the rescale.
Requirements anytime() {
  return {
      .needs_data = Flag{{.why = "its workers' rows are what it counts"}},
      .codes = OneOf{{"uncoded"}, {}},
      .partitions_per_worker = Count{1, {}},
      .needs_simulated_clock = Flag{},
      .no_minibatch = Flag{{.why = "the window sets each worker's sample"}},
      .straggler_policy = OneOf{{"cancel"}, {.why = "every worker sends"}},
      .rescale = OneOf{{"none"}, {.why = "it weights by counts itself"}},
  };
}

/// Multi-message (docs/model.md §4 "Multi-message") runs on the simulated clock; it decodes by
/// coverage, so the only rescale it takes is the empirical k / covered.
Requirements multi_message() {
  return {
      .needs_simulated_clock = Flag{},
      .rescale =
          OneOf{{"none", "empirical"}, {.problem = "has no erasure probability to rescale by"}},
  };
}

/// DropCompute: multi-message's requirements, on a code whose workers each hold their own
/// micro-batches (uncoded; proportional with d = 1 and equal factors for k/n per worker).
Requirements drop_compute() {
  Requirements r = multi_message();
  r.codes = OneOf{{"proportional", "uncoded"},
                  {.why = "its micro-batches are each worker's own partitions"}};
  return r;
}

/// The adaptive deadline and the adaptive r follow the simulated arrival times of the run's
/// delays: on a real backend those are the injected delays, so an MPI run that injects none
/// cannot have one.
Requirements adaptive(const std::string& what) {
  return {
      .subject = "the adaptive " + what,
      .injected_delays = Flag{{.problem = "follows the injected delays; this backend injects none",
                               .accepted = "\"inject\": true, or a fixed " + what,
                               .at = ReportAt::kSelectorName}},
  };
}

/// The update rules of the asynchronous loop.
std::vector<FactoryRow<StoppingFactory>> asynchronous_rules() {
  return {
      {"k_async",
       "asynchronous: update after every k gradients, new x to those k workers only (k = 1: "
       "async SGD)",
       {{"k", ""}, {"staleness_step", "constant"}},
       [](JsonReader& r, const CodePtr& c) {
         return make_update_rule(r, c, sim::UpdateMode::kKAsync);
       },
       asynchronous("k_async")},
      {"k_batch_async",
       "asynchronous: update after every k gradients; workers fetch x and restart at once",
       {{"k", ""}, {"staleness_step", "constant"}},
       [](JsonReader& r, const CodePtr& c) {
         return make_update_rule(r, c, sim::UpdateMode::kKBatchAsync);
       },
       asynchronous("k_batch_async")},
      {"k_batch_sync",
       "update after the first k gradients computed at x (workers restart at the same x "
       "until then)",
       {{"k", ""}, {"staleness_step", "constant"}},
       [](JsonReader& r, const CodePtr& c) {
         return make_update_rule(r, c, sim::UpdateMode::kKBatchSync);
       },
       asynchronous("k_batch_sync")},
  };
}

/// The time-optimal methods (docs/model.md §4 "Time-optimal methods"), on the asynchronous loop.
std::vector<FactoryRow<StoppingFactory>> time_optimal_rules() {
  return {
      {"malenia",
       "Malenia SGD: gradients at the current x until every worker has b_i >= 1 and n / sum "
       "1/b_i >= batch/n; the mean of each worker's gradients (heterogeneous data)",
       {{"batch", ""}, {"stop_stale", "false"}},
       [](JsonReader& r, const CodePtr& c) {
         return make_time_optimal(r, c, sim::UpdateMode::kMalenia);
       },
       asynchronous("malenia")},
      {"mindflayer",
       "MindFlayer SGD: Rennala whose worker i abandons an attempt at its cut-off and restarts "
       "with a fresh draw",
       {{"batch", ""}, {"cutoffs", ""}, {"stop_stale", "false"}, {"sampling", "own"}},
       [](JsonReader& r, const CodePtr& c) {
         return make_time_optimal(r, c, sim::UpdateMode::kMindFlayer);
       },
       asynchronous("mindflayer")},
      {"rennala",
       "Rennala SGD: update once batch gradients computed at the current x are in (fast workers "
       "several times); older gradients are discarded",
       {{"batch", ""}, {"stop_stale", "false"}, {"sampling", "own"}},
       [](JsonReader& r, const CodePtr& c) {
         return make_time_optimal(r, c, sim::UpdateMode::kRennala);
       },
       asynchronous("rennala")},
      {"rescaled_async",
       "Rescaled ASGD: asynchronous SGD whose worker i steps by step x tau_i / harmonic mean "
       "of the tau (tau_i its mean compute time)",
       {{"staleness_step", "constant"}},
       [](JsonReader& r, const CodePtr& c) {
         return make_time_optimal(r, c, sim::UpdateMode::kRescaledAsync);
       },
       asynchronous("rescaled_async")},
      {"ringmaster",
       "Ringmaster ASGD: asynchronous SGD discarding a gradient whose delay reaches max_delay "
       "(stop_stale: the worker stops computing it)",
       {{"max_delay", "none"},
        {"stop_stale", "false"},
        {"sampling", "own"},
        {"staleness_step", "constant"}},
       [](JsonReader& r, const CodePtr& c) {
         return make_time_optimal(r, c, sim::UpdateMode::kRingmaster);
       },
       asynchronous("ringmaster")},
  };
}

/// The synchronous rules, then the asynchronous ones.
std::vector<FactoryRow<StoppingFactory>> builtin_rules() {
  std::vector<FactoryRow<StoppingFactory>> rows = {
      {"adaptive_deadline",
       "a deadline from the last window iterations' arrival times: their quantile, or median + "
       "mads MADs (simulated clock; threads and MPI follow the injected delays)",
       {{"window", ""}, {"quantile", ""}, {"mads", ""}},
       make_adaptive_deadline,
       adaptive("deadline")},
      {"adaptive_r",
       "stop at the r-th arrival, r the most workers whose mean arrival over the last window "
       "iterations is within (1 + slack) of the r_min-th's (grows by one per window; simulated "
       "clock; threads and MPI follow the injected delays)",
       {{"window", "10"}, {"r_min", "1"}, {"r_max", "n"}, {"slack", "0.5"}},
       make_adaptive_r,
       adaptive("r")},
      {"all", "wait for every worker", {}, make_all},
      {"anytime",
       "anytime minibatch: every worker computes for window seconds and sends the rows it "
       "finished; the master weights by counts (uncoded, simulated clock)",
       {{"window", ""}},
       make_anytime,
       anytime()},
      {"deadline",
       "stop after seconds past the broadcast (or once every worker is in)",
       {{"after", ""}},
       make_deadline},
      {"decodable", "stop once the workers heard decode exactly", {}, make_decodable},
      {"drop_compute",
       "DropCompute: each worker sends its micro-batches (partitions) as it finishes them and "
       "stops at threshold seconds; the multi-message rule with a deadline (simulated clock)",
       {{"threshold", ""}},
       make_drop_compute,
       drop_compute()},
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
       make_multi_message,
       multi_message()},
  };
  for (auto& row : asynchronous_rules()) {
    rows.push_back(std::move(row));
  }
  for (auto& row : time_optimal_rules()) {
    rows.push_back(std::move(row));
  }
  return rows;
}

RowRegistry<FactoryRow<StoppingFactory>>& rule_registry() {
  static RowRegistry<FactoryRow<StoppingFactory>> table(builtin_rules(), "stopping rule");
  return table;
}

}  // namespace

std::vector<FactoryRow<StoppingFactory>> stopping_factories() { return rule_registry().rows(); }

void register_stopping_rule(FactoryRow<StoppingFactory> row) {
  rule_registry().add(std::move(row));
}

void unregister_stopping_rule(std::string_view name) { rule_registry().remove(name); }

}  // namespace stragglersim::experiments
