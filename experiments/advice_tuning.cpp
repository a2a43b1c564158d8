#include "experiments/advice_tuning.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <numeric>
#include <utility>

#include "experiments/config/config_error.h"
#include "experiments/predict/convergence_predictions.h"
#include "sim/scheme.h"

namespace stragglersim::experiments {
namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();
const std::string kStepPointer = "/optimizer/step";
constexpr std::size_t kNoPoint = std::numeric_limits<std::size_t>::max();
/// The pruning bound before any point has reached the target: no finite estimate is above it,
/// but a point still stops at its first run that misses the target (it cannot be chosen then).
constexpr double kNoBestYet = std::numeric_limits<double>::max();

/// Distinct ⌈f·n⌉ over kCountFractions within [1, upper].
std::vector<double> count_grid(int n, int upper) {
  std::vector<double> out;
  for (const double f : kCountFractions) {
    const int v = std::clamp(static_cast<int>(std::ceil(f * n - 1e-9)), 1, upper);
    if (out.empty() || out.back() != v) {
      out.push_back(v);
    }
  }
  return out;
}

TunedParameter count_parameter(std::string pointer, std::string key, int n, int upper) {
  TunedParameter p;
  p.pointer = std::move(pointer);
  p.label_key = std::move(key);
  p.values = count_grid(n, upper);
  p.upper_bound = upper;
  return p;
}

TunedParameter window_parameter(std::string pointer, std::string key, double tau) {
  TunedParameter p;
  p.pointer = std::move(pointer);
  p.label_key = std::move(key);
  for (const double m : kWindowMultipliers) {
    p.values.push_back(m * tau);
  }
  p.integer = false;
  p.lower_bound = 0.0;  // no bound is ever at the grid's ends
  p.upper_bound = kInf;
  return p;
}

nlohmann::json value_of(const TunedParameter& p, double v) {
  return p.integer ? nlohmann::json(static_cast<int>(v)) : nlohmann::json(v);
}

/// The family of a candidate: its block without the tuned parameters, and its aggregation.
std::string family_key(const SchemeCandidate& c, int workers) {
  nlohmann::json block = c.block;
  for (const auto& p : tuned_parameters(c, workers)) {
    block[nlohmann::json::json_pointer(p.pointer)] = nullptr;
  }
  return c.aggregation + "|" + block.dump();
}

/// Whether the value chosen at index `i` of `values` sits at an end of the grid that is not the
/// parameter's own bound.
bool at_edge(const std::vector<double>& values, std::size_t i, double lower, double upper) {
  return (i == 0 && values.front() > lower) || (i + 1 == values.size() && values.back() < upper);
}

/// One point of the grid: the index of the step multiplier and of every parameter's value.
struct GridPoint {
  std::size_t step = 0;
  std::vector<std::size_t> values;
};

/// Every point, the step slowest and the last parameter fastest.
std::vector<GridPoint> enumerate_grid(const std::vector<TunedParameter>& params) {
  std::size_t combinations = 1;
  for (const auto& p : params) {
    combinations *= p.values.size();
  }
  std::vector<GridPoint> out;
  for (std::size_t s = 0; s < kStepMultipliers.size(); ++s) {
    for (std::size_t i = 0; i < combinations; ++i) {
      GridPoint g;
      g.step = s;
      g.values.assign(params.size(), 0);
      std::size_t rest = i;
      for (std::size_t k = params.size(); k-- > 0;) {
        g.values[k] = rest % params[k].values.size();
        rest /= params[k].values.size();
      }
      out.push_back(std::move(g));
    }
  }
  return out;
}

}  // namespace

std::vector<TunedParameter> tuned_parameters(const SchemeCandidate& c, int workers) {
  const int n = workers;
  const nlohmann::json& stopping = c.block["stopping"];
  const std::string rule = stopping.value("rule", "");
  const std::string code = c.block["code"].value("kind", "");
  std::vector<TunedParameter> out;
  if ((rule == "first_r" && code != "bgc") || rule == "first_r_or_decodable") {
    if (n > 1) {
      const bool k_sync = c.label.find(" K=") != std::string::npos && rule == "first_r";
      out.push_back(count_parameter("/stopping/r", k_sync ? "K" : "r", n, n - 1));
    }
  } else if (rule == "k_async") {
    out.push_back(count_parameter("/stopping/k", "K", n, n));
  } else if (rule == "deadline" && stopping.contains("after")) {
    out.push_back(window_parameter("/stopping/after", "deadline", stopping["after"].get<double>()));
  } else if (rule == "anytime" && stopping.contains("window")) {
    out.push_back(window_parameter("/stopping/window", "window", stopping["window"].get<double>()));
  }
  return out;
}

std::size_t grid_points(const SchemeCandidate& c, int workers) {
  std::size_t points = kStepMultipliers.size();
  for (const auto& p : tuned_parameters(c, workers)) {
    points *= p.values.size();
  }
  return points;
}

std::vector<SchemeCandidate> tuning_families(std::vector<SchemeCandidate> candidates, int workers) {
  const auto half = static_cast<double>((workers + 1) / 2);
  std::vector<SchemeCandidate> out;
  std::map<std::string, std::size_t> index;  // family → its place in out
  for (auto& c : candidates) {
    const std::string key = family_key(c, workers);
    const auto found = index.find(key);
    if (found == index.end()) {
      index.emplace(key, out.size());
      out.push_back(std::move(c));
      continue;
    }
    const auto params = tuned_parameters(c, workers);
    if (!params.empty() && params.front().integer &&
        c.block[nlohmann::json::json_pointer(params.front().pointer)].get<double>() == half) {
      out[found->second] = std::move(c);
    }
  }
  return out;
}

nlohmann::json tuning_json(const TuningChoice& t) {
  return {{"step", t.step},
          {"step_multiplier", t.step_multiplier},
          {"parameters", t.parameters},
          {"grid", t.grid},
          {"grid_points", t.grid_points},
          {"at_edge", t.at_edge},
          {"tuning_time_to_target",
           std::isfinite(t.tuning_total) ? nlohmann::json(t.tuning_total) : nlohmann::json()}};
}

std::string tuning_summary(const TuningChoice& t) {
  if (!std::isfinite(t.tuning_total)) {
    return "no point reached";
  }
  std::string out = fmt::format("step {:g}x = {:.4g}", t.step_multiplier, t.step);
  for (const auto& [pointer, value] : t.parameters.items()) {
    const std::string name = pointer.substr(pointer.rfind('/') + 1);
    out += value.is_number_integer() ? fmt::format(", {}={}", name, value.get<int>())
                                     : fmt::format(", {}={:.4g}", name, value.get<double>());
  }
  if (!t.at_edge.empty()) {
    std::string edges;
    for (const auto& e : t.at_edge) {
      edges += (edges.empty() ? "" : ", ") + e.substr(e.rfind('/') + 1);
    }
    out += ", edge: " + edges;
  }
  return out;
}

void relabel_tuned(SchemeCandidate& c) {
  if (!c.tuning) {
    return;
  }
  // The label's parameters are read back from the block (the workers do not matter here).
  for (const auto& [pointer, value] : c.tuning->parameters.items()) {
    const std::string rule = c.block["stopping"].value("rule", "");
    std::string key;
    if (pointer == "/stopping/r") {
      key = c.label.find(" K=") != std::string::npos && rule == "first_r" ? "K" : "r";
    } else if (pointer == "/stopping/k") {
      key = "K";
    } else if (pointer == "/stopping/after") {
      key = "deadline";
    } else {
      key = "window";
    }
    const std::string token = " " + key + "=";
    const std::size_t at = c.label.find(token);
    if (at == std::string::npos) {
      continue;
    }
    const std::size_t from = at + token.size();
    const std::size_t to = std::min(c.label.find(' ', from), c.label.size());
    const std::string shown = value.is_number_integer()
                                  ? std::to_string(value.get<int>())
                                  : fmt::format("{:.4g}", value.get<double>());
    c.label.replace(from, to - from, shown);
  }
}

AdviceTuner::AdviceTuner(const Advice& advice,
                         std::string file,
                         std::filesystem::path base_dir,
                         const AdviceOptions& options,
                         int workers)
    : advice_(advice),
      file_(std::move(file)),
      base_dir_(std::move(base_dir)),
      options_(options),
      workers_(workers) {}

namespace {

/// Wall seconds of one simulated training run of `c` (the probe); 0 when it does not plan or
/// diverges (the estimate then says 0 s: nothing measured).
double probe_seconds(const Advice& advice,
                     const std::string& file,
                     const std::filesystem::path& base_dir,
                     const SchemeCandidate& c) {
  nlohmann::json predicted = advice.config;
  predicted["delay"] = advice.predicted_delay;
  try {
    const RunPlan plan = plan_run(apply_candidate(predicted, c), file, base_dir);
    const auto start = std::chrono::steady_clock::now();
    simulate_training(plan, derive_seed(plan.seed, kTuningStream), [](const sim::TraceRow&) {});
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  } catch (const ConfigError&) {
    return 0.0;
  } catch (const sim::NumericalError&) {
    return 0.0;
  }
}

/// The grid's steps: kStepMultipliers times the config's (resolved) step.
std::vector<double> grid_steps(double base_step) {
  std::vector<double> steps;
  steps.reserve(kStepMultipliers.size());
  for (const double m : kStepMultipliers) {
    steps.push_back(m * base_step);
  }
  return steps;
}

/// The grid of `c` as TuningChoice::grid: the steps, then each parameter's values.
nlohmann::json grid_json(const std::vector<double>& steps,
                         const std::vector<TunedParameter>& params) {
  nlohmann::json grid = nlohmann::json::object();
  grid[kStepPointer] = steps;
  for (const auto& p : params) {
    nlohmann::json values = nlohmann::json::array();
    for (const double v : p.values) {
      values.push_back(value_of(p, v));
    }
    grid[p.pointer] = std::move(values);
  }
  return grid;
}

/// The point chosen when no point reaches the target: the config's step (multiplier 1) and the
/// grid value nearest each listed parameter.
GridPoint listed_point(const SchemeCandidate& c, const std::vector<TunedParameter>& params) {
  GridPoint chosen;
  chosen.step = 1;
  for (const auto& p : params) {
    const double listed = c.block[nlohmann::json::json_pointer(p.pointer)].get<double>();
    const auto near =
        std::min_element(p.values.begin(), p.values.end(), [listed](double a, double b) {
          return std::abs(a - listed) < std::abs(b - listed);
        });
    chosen.values.push_back(static_cast<std::size_t>(near - p.values.begin()));
  }
  return chosen;
}

/// The pointers whose value at `g` sits at an edge of its grid.
std::vector<std::string> edges_of(const GridPoint& g,
                                  const std::vector<double>& steps,
                                  const std::vector<TunedParameter>& params) {
  std::vector<std::string> out;
  if (at_edge(steps, g.step, 0.0, kInf)) {
    out.push_back(kStepPointer);
  }
  for (std::size_t i = 0; i < params.size(); ++i) {
    if (at_edge(params[i].values, g.values[i], params[i].lower_bound, params[i].upper_bound)) {
      out.push_back(params[i].pointer);
    }
  }
  return out;
}

/// `block` at grid point `g`.
nlohmann::json block_at(nlohmann::json block,
                        const GridPoint& g,
                        const std::vector<double>& steps,
                        const std::vector<TunedParameter>& params) {
  block["optimizer"] = {{"step", steps[g.step]}};
  for (std::size_t i = 0; i < params.size(); ++i) {
    block[nlohmann::json::json_pointer(params[i].pointer)] =
        value_of(params[i], params[i].values[g.values[i]]);
  }
  return block;
}

/// The points of step `s` in the order they are estimated: the point with the values of the
/// best point so far (`best`, an index into the grid; none: grid.size()) first, whose time is
/// likely near the best and so sets a low bound for the others, then the rest in grid order.
std::vector<std::size_t> step_order(std::size_t s, std::size_t per_step, std::size_t best) {
  std::vector<std::size_t> order(per_step);
  std::iota(order.begin(), order.end(), s * per_step);
  if (best != kNoPoint) {
    const auto first = order.begin() + static_cast<std::ptrdiff_t>(best % per_step);
    std::rotate(order.begin(), first, first + 1);
  }
  return order;
}

/// Sets `c`'s block to the chosen point (`best`, or the listed point when no point reached the
/// target) and `c.tuning` to `choice` completed with it.
void apply_choice(SchemeCandidate& c,
                  TuningChoice choice,
                  const GridPoint* best,
                  const std::vector<double>& steps,
                  const std::vector<TunedParameter>& params) {
  const GridPoint chosen = best != nullptr ? *best : listed_point(c, params);
  if (best != nullptr) {
    choice.at_edge = edges_of(chosen, steps, params);
  }
  c.block = block_at(c.block, chosen, steps, params);
  choice.step = steps[chosen.step];
  choice.step_multiplier = kStepMultipliers[chosen.step];
  for (std::size_t i = 0; i < params.size(); ++i) {
    choice.parameters[params[i].pointer] = value_of(params[i], params[i].values[chosen.values[i]]);
  }
  c.tuning = std::move(choice);
}

}  // namespace

const SchemeCandidate* AdviceTuner::full_gradient_at(const SchemeCandidate& c) const {
  if (!c.tuning) {
    return nullptr;
  }
  for (std::size_t s = 0; s < kStepMultipliers.size(); ++s) {
    if (kStepMultipliers[s] == c.tuning->step_multiplier && full_by_step_[s]) {
      return &*full_by_step_[s];
    }
  }
  return nullptr;
}

void AdviceTuner::announce(const std::vector<SchemeCandidate>& candidates,
                           const std::vector<SchemeCandidate>& more) {
  for (const auto* list : {&candidates, &more}) {
    for (const auto& c : *list) {
      total_ += grid_points(c, workers_);
    }
  }
  if (!options_.note || candidates.empty()) {
    return;
  }
  // The probe: one simulated training run of the first candidate at the config's step.
  const double seconds = probe_seconds(advice_, file_, base_dir_, candidates.front());
  const std::size_t schemes = candidates.size() + more.size();
  // Every grid point's tuning runs, every scheme's fresh ones and its --measure runs.
  const double runs =
      static_cast<double>(options_.repetitions) * static_cast<double>(total_ + schemes) +
      static_cast<double>(options_.measure) * static_cast<double>(schemes);
  // The schemes share the threads (each scheme's points run one after the other).
  const int threads = std::max(1, options_.threads);
  options_.note(fmt::format(
      "advise: tuning {} schemes over {} grid points ({} step multipliers x their K, r or "
      "deadline), {} simulated runs each: at most about {:.0f} s on {} thread{} (one run of {} "
      "took {:.3g} s; a point's runs stop once it cannot beat the best so far; --fixed-step "
      "skips the tuning)",
      schemes,
      total_,
      kStepMultipliers.size(),
      options_.repetitions,
      runs * seconds / static_cast<double>(std::min(static_cast<std::size_t>(threads), schemes)),
      threads,
      threads == 1 ? "" : "s",
      candidates.front().label,
      seconds));
}

void AdviceTuner::prepare(std::vector<SchemeCandidate>& candidates,
                          const nlohmann::json& aggregation) {
  candidates = tuning_families(std::move(candidates), workers_);
  // deadline_candidates' lists at a placeholder τ (the grids do not depend on it).
  std::vector<SchemeCandidate> more;
  for (auto& c : scheme_candidates(workers_, 1.0)) {
    if (c.label.find("deadline=") != std::string::npos || c.label.starts_with("anytime") ||
        c.label.starts_with("mindflayer")) {
      more.push_back(std::move(c));
    }
  }
  if (aggregation.is_object()) {
    for (auto& c : collective_candidates(aggregation, workers_, 1.0, advice_.predicted_delay)) {
      if (c.label.find("deadline=") != std::string::npos ||
          c.label.find("threshold=") != std::string::npos) {
        more.push_back(std::move(c));
      }
    }
  }
  announce(candidates, more);
}

void AdviceTuner::count_point() {
  const std::lock_guard lock(progress_mutex_);
  ++done_;
  if (options_.progress) {
    options_.progress(done_, total_);
  }
}

void AdviceTuner::tune(SchemeCandidate& c) {
  const std::vector<TunedParameter> params = tuned_parameters(c, workers_);
  const std::vector<GridPoint> grid = enumerate_grid(params);
  const std::vector<double> steps = grid_steps(advice_.base_step);
  TuningChoice choice;
  choice.grid_points = grid.size();
  choice.grid = grid_json(steps, params);
  // Uncoded's estimates are kept whole (an exact decode takes its iterations at each step);
  // every other candidate's points stop as soon as they cannot beat the best so far.
  const bool reference = c.label == "uncoded";
  IterationTimeCache iteration_times;  // this candidate's: no two candidates share a block
  const GridPoint* best = nullptr;
  // The largest step first: a step that is too large diverges within a few iterations, and
  // most schemes' best points are at the larger steps, so the bound is low early.
  const std::size_t per_step = grid.size() / kStepMultipliers.size();
  std::vector<std::size_t> order;  // the current step's points
  for (std::size_t next = 0; next < grid.size(); ++next) {
    if (next % per_step == 0) {
      const std::size_t s = kStepMultipliers.size() - 1 - next / per_step;
      order = step_order(
          s, per_step, best != nullptr ? static_cast<std::size_t>(best - grid.data()) : kNoPoint);
    }
    const GridPoint& g = grid[order[next % per_step]];
    SchemeCandidate point = c;
    point.block = block_at(c.block, g, steps, params);
    const auto& full = full_by_step_[g.step];
    (void)estimate_candidate(advice_,
                             file_,
                             base_dir_,
                             options_.repetitions,
                             kTuningStream,
                             true,
                             point,
                             &iteration_times,
                             full ? &*full : nullptr,
                             reference ? kInf : std::min(choice.tuning_total, kNoBestYet));
    // The least time, ties to the earlier point of the grid (the smaller step).
    if (point.problem.empty() &&
        (point.total < choice.tuning_total ||
         (best != nullptr && point.total == choice.tuning_total && &g < best))) {
      choice.tuning_total = point.total;
      best = &g;
    }
    if (reference) {
      full_by_step_[g.step] = std::move(point);
    }
    count_point();
  }
  apply_choice(c, std::move(choice), best, steps, params);
}

}  // namespace stragglersim::experiments
