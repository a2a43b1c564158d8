#include "experiments/validation_time_to_target.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>  // mkdtemp (POSIX)
#include <fstream>
#include <limits>
#include <stdexcept>
#include <utility>

#include "experiments/config/config_error.h"
#include "experiments/config/run_plan.h"
#include "experiments/scheme_advice.h"
#include "models/base/random_stream.h"

namespace stragglersim::experiments {
namespace {

constexpr double kNotPredicted = std::numeric_limits<double>::quiet_NaN();

/// The two parts written as `iteration,worker,seconds` files (trace delays read files), removed
/// with the object.
class PartFiles {
 public:
  PartFiles(const sim::DelayTrace& fit, const sim::DelayTrace& holdout) {
    std::string pattern =
        (std::filesystem::temp_directory_path() / "stragglersim-validate-XXXXXX").string();
    if (::mkdtemp(pattern.data()) == nullptr) {
      throw std::runtime_error("validate: cannot create a temporary folder for the trace parts");
    }
    dir_ = pattern;
    fit_ = write(dir_ / "fit.csv", fit);
    holdout_ = write(dir_ / "holdout.csv", holdout);
  }
  ~PartFiles() {
    std::error_code ignored;
    std::filesystem::remove_all(dir_, ignored);
  }
  PartFiles(const PartFiles&) = delete;
  PartFiles& operator=(const PartFiles&) = delete;
  PartFiles(PartFiles&&) = delete;
  PartFiles& operator=(PartFiles&&) = delete;

  [[nodiscard]] const std::string& fit() const { return fit_; }
  [[nodiscard]] const std::string& holdout() const { return holdout_; }

 private:
  static std::string write(const std::filesystem::path& path, const sim::DelayTrace& part) {
    std::ofstream out(path);
    out << "iteration,worker,seconds\n";
    for (std::size_t t = 0; t < part.per_iteration.size(); ++t) {
      for (std::size_t w = 0; w < part.per_iteration[t].size(); ++w) {
        out << fmt::format("{},{},{}\n", part.iterations[t], w, part.per_iteration[t][w]);
      }
    }
    if (!out) {
      throw std::runtime_error("validate: cannot write " + path.string());
    }
    return path.string();
  }
  std::filesystem::path dir_;
  std::string fit_;
  std::string holdout_;
};

/// Each model's predicted delay (model order), and the held-out replay's.
std::vector<nlohmann::json> model_delays(const TimeToTargetInputs& in, const PartFiles& files) {
  std::vector<nlohmann::json> out;
  for (const auto& model : in.models) {
    if (model == "block replay") {
      out.push_back({{"kind", "trace"},
                     {"path", files.fit()},
                     {"mode", "block"},
                     {"block", in.block_length},
                     {"tail", in.tail}});
    } else if (model == "empirical") {
      out.push_back(
          {{"kind", "trace"}, {"path", files.fit()}, {"mode", "empirical"}, {"tail", in.tail}});
    } else {
      out.push_back(in.fitted_delay);
    }
  }
  return out;
}

/// Each worker's mean time over the fastest's on `part` (what "factors": "delay" takes from a
/// replayed trace).
std::vector<double> trace_factors(const sim::DelayTrace& part) {
  std::vector<double> means;
  for (const auto& times : part.per_worker) {
    double sum = 0.0;
    for (const double t : times) sum += t;
    means.push_back(sum / static_cast<double>(times.size()));
  }
  const double fastest = means.empty() ? 1.0 : *std::min_element(means.begin(), means.end());
  for (double& m : means) m /= fastest;
  return means;
}

/// The candidate as planned, its outcome cleared, "factors": "delay" fixed to the fit part's.
SchemeCandidate fixed_candidate(const SchemeCandidate& c, const std::vector<double>& factors) {
  SchemeCandidate out;
  out.label = c.label;
  out.block = c.block;
  out.aggregation = c.aggregation;
  out.baseline = c.baseline;
  out.adaptive = c.adaptive;
  out.time_optimal = c.time_optimal;
  auto& code = out.block["code"];
  if (code.contains("factors") && code["factors"].is_string()) {
    code["factors"] = factors;
  }
  return out;
}

/// The held-out replay of one candidate: R runs from random start rows.
void replay(const TimeToTargetInputs& in,
            const nlohmann::json& delay,
            double target_loss,
            int runs,
            const SchemeCandidate& c,
            TimeToTargetRow& row) {
  nlohmann::json config = in.config;
  config["delay"] = delay;
  RunPlan plan;
  try {
    plan = plan_run(apply_candidate(config, c), in.file, in.base_dir);
  } catch (const ConfigError& e) {
    row.problem = fmt::format("cannot replay: {}", e.what());
    return;
  }
  const std::vector<double> times = measure_time_to_target(
      plan, runs, derive_seed(plan.seed, kTimeToTargetReplayStream), target_loss);
  row.runs = runs;
  double sum = 0.0;
  double squares = 0.0;
  for (const double t : times) {
    if (std::isfinite(t)) {
      ++row.reached;
      sum += t;
      squares += t * t;
    }
  }
  if (row.reached < runs) {
    return;  // +∞: not every run reached the target
  }
  const auto n = static_cast<double>(runs);
  row.replayed = sum / n;
  row.replayed_se =
      n > 1.0
          ? std::sqrt(std::max(0.0, (squares - n * row.replayed * row.replayed) / (n - 1.0) / n))
          : 0.0;
}

/// Fills row[m]'s prediction by model m from its advice.
void record_predictions(const Advice& advice, std::size_t m, std::vector<TimeToTargetRow>& rows) {
  for (auto& row : rows) {
    for (const auto& c : advice.ranked) {
      if (c.label != row.scheme) continue;
      row.predicted[m] = c.problem.empty() ? c.total : kNotPredicted;
      row.methods[m] = c.problem.empty() ? c.total_method : "not predicted: " + c.problem;
    }
  }
}

/// Why the config cannot be compared on time to target, or empty.
std::string missing_inputs(const TimeToTargetInputs& in, const TimeToTargetOptions& options) {
  const RunPlan base = plan_run(in.config, in.file, in.base_dir);
  if (base.delay_only()) {
    return "no data: the config's data is null; time to target needs data, a loss and a target";
  }
  if (!base.target_loss && !options.suboptimality) {
    return "no target: the config has no target_loss; give one or --suboptimality";
  }
  return {};
}

/// Ranks the compared rows by their replayed time (others last, in candidate order).
void rank_rows(std::vector<TimeToTargetRow>& rows) {
  std::vector<double> replayed;
  std::vector<std::size_t> compared;
  for (std::size_t i = 0; i < rows.size(); ++i) {
    if (rows[i].problem.empty()) {
      compared.push_back(i);
      replayed.push_back(rows[i].replayed);
    }
  }
  for (std::size_t k = 0; k < compared.size(); ++k) {
    rows[compared[k]].rank = replay_rank(replayed, k);
  }
  std::stable_sort(rows.begin(), rows.end(), [](const auto& a, const auto& b) {
    const bool a_in = a.problem.empty();
    const bool b_in = b.problem.empty();
    return a_in != b_in ? a_in : (a_in && a.rank < b.rank);
  });
}

nlohmann::json finite_or_null(double v) {
  return std::isfinite(v) ? nlohmann::json(v) : nlohmann::json();
}

}  // namespace

std::size_t replay_rank(const std::vector<double>& replayed, std::size_t i) {
  const double x = replayed.at(i);
  return 1 + static_cast<std::size_t>(
                 std::count_if(replayed.begin(), replayed.end(), [x](double y) { return y < x; }));
}

std::vector<TimeToTargetPick> time_to_target_picks(const std::vector<TimeToTargetRow>& rows,
                                                   const std::vector<std::string>& models) {
  std::vector<TimeToTargetPick> out;
  const TimeToTargetRow* best = nullptr;
  std::size_t compared = 0;
  for (const auto& row : rows) {
    if (!row.problem.empty()) continue;
    ++compared;
    if (best == nullptr || row.replayed < best->replayed) best = &row;
  }
  if (best == nullptr) {
    return out;
  }
  for (std::size_t m = 0; m < models.size(); ++m) {
    const TimeToTargetRow* pick = nullptr;
    for (const auto& row : rows) {
      if (row.problem.empty() && std::isfinite(row.predicted[m]) &&
          (pick == nullptr || row.predicted[m] < pick->predicted[m])) {
        pick = &row;
      }
    }
    if (pick == nullptr) continue;  // the model reaches the target with no scheme
    out.push_back({.model = models[m],
                   .scheme = pick->scheme,
                   .predicted = pick->predicted[m],
                   .replayed = pick->replayed,
                   .replayed_se = pick->replayed_se,
                   .reached = pick->reached,
                   .runs = pick->runs,
                   .rank = pick->rank,
                   .of = compared,
                   .best = best->scheme,
                   .best_replayed = best->replayed,
                   .best_se = best->replayed_se,
                   .behind_best = (pick->replayed - best->replayed) / best->replayed});
  }
  return out;
}

TimeToTargetValidation validate_time_to_target(const TimeToTargetInputs& in,
                                               const TimeToTargetOptions& options) {
  TimeToTargetValidation out;
  out.models = in.models;
  out.chosen = in.chosen;
  out.repetitions = options.repetitions;
  out.not_compared = missing_inputs(in, options);
  if (!out.not_compared.empty()) {
    return out;
  }
  const PartFiles files(in.fit, in.holdout);
  const std::vector<nlohmann::json> delays = model_delays(in, files);
  const auto chosen = static_cast<std::size_t>(
      std::find(in.models.begin(), in.models.end(), in.chosen) - in.models.begin());
  AdviceOptions advice_options;
  advice_options.suboptimality = options.suboptimality;
  advice_options.repetitions = options.repetitions;
  advice_options.fixed_step = options.fixed_step;
  advice_options.threads = options.threads;
  // The chosen model places the candidates (deadlines, proportional loads), as advise --fit would.
  advice_options.predicted_delay = delays.at(chosen);
  const Advice first = advise(in.config, in.file, in.base_dir, advice_options);
  out.f_star = first.f_star;
  out.target_loss = first.target_loss;
  out.target_gap = first.target_gap;
  out.horizon = first.horizon;
  const std::vector<double> factors = trace_factors(in.fit);
  std::vector<SchemeCandidate> candidates;
  for (const auto& c : first.ranked) {
    candidates.push_back(fixed_candidate(c, factors));
    TimeToTargetRow row;
    row.scheme = c.label;
    row.block = candidates.back().block;
    row.predicted.assign(in.models.size(), kNotPredicted);
    row.methods.assign(in.models.size(), std::string());
    if (!c.problem.empty()) {
      row.problem = c.problem;  // the config cannot run it (advise's "not predicted")
    }
    out.rows.push_back(std::move(row));
  }
  for (std::size_t m = 0; m < in.models.size(); ++m) {
    advice_options.predicted_delay = delays[m];
    record_predictions(
        advise_candidates(in.config, in.file, in.base_dir, advice_options, candidates),
        m,
        out.rows);
  }
  const nlohmann::json held_out = {{"kind", "trace"},
                                   {"path", files.holdout()},
                                   {"mode", "cycle"},
                                   {"start", "random"},
                                   {"tail", in.tail}};
  for (std::size_t i = 0; i < candidates.size(); ++i) {
    if (!out.rows[i].problem.empty()) continue;
    replay(in, held_out, out.target_loss, options.repetitions, candidates[i], out.rows[i]);
  }
  rank_rows(out.rows);
  out.picks = time_to_target_picks(out.rows, in.models);
  return out;
}

nlohmann::json time_to_target_json(const TimeToTargetValidation& t) {
  if (!t.not_compared.empty()) {
    return {{"not_compared", t.not_compared}};
  }
  nlohmann::json j = {{"f_star", t.f_star},
                      {"target_loss", t.target_loss},
                      {"target_gap", t.target_gap},
                      {"horizon", t.horizon},
                      {"repetitions", t.repetitions},
                      {"models", t.models},
                      {"chosen", t.chosen},
                      {"rows", nlohmann::json::array()},
                      {"picks", nlohmann::json::array()}};
  for (const auto& r : t.rows) {
    nlohmann::json row = {{"scheme", r.scheme}, {"block", r.block}};
    if (!r.problem.empty()) {
      row["problem"] = r.problem;
    } else {
      nlohmann::json predicted = nlohmann::json::array();
      for (std::size_t m = 0; m < t.models.size(); ++m) {
        predicted.push_back({{"model", t.models[m]},
                             {"time_to_target", finite_or_null(r.predicted[m])},
                             {"method", r.methods[m]}});
      }
      row["predicted"] = std::move(predicted);
      row["replay_runs"] = r.runs;
      row["replay_reached"] = r.reached;
      row["replayed"] = finite_or_null(r.replayed);
      row["replayed_se"] = r.replayed_se;
      row["rank"] = r.rank;
    }
    j["rows"].push_back(std::move(row));
  }
  for (const auto& p : t.picks) {
    j["picks"].push_back({{"model", p.model},
                          {"recommended", p.scheme},
                          {"predicted", p.predicted},
                          {"replayed", finite_or_null(p.replayed)},
                          {"replayed_se", p.replayed_se},
                          {"replay_reached", p.reached},
                          {"rank", p.rank},
                          {"of", p.of},
                          {"best", p.best},
                          {"best_replayed", finite_or_null(p.best_replayed)},
                          {"behind_best", finite_or_null(p.behind_best)}});
  }
  return j;
}

}  // namespace stragglersim::experiments
