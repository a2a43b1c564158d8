#pragma once
// The claims of `stragglersim check` (experiments/cli/check_command.cpp), grouped by the theory
// they hold against simulation, one file each. A group appends its rows to `rows` in a fixed
// order, with its own fixed seeds, and writes its own file under `out` when that is not empty;
// `quick` trades iterations and repetitions for time. A new claim is one row in its concept
// file; a new group is one function here and one row in check_command.cpp's table.

#include <cmath>
#include <cstdint>
#include <filesystem>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "codes/gradient_code.h"
#include "sim/delays/delay_model.h"
#include "sim/stopping_rule.h"

namespace stragglersim::experiments::check {

/// One line of the table: "claim · theory · simulation · tolerance · PASS/FAIL".
struct CheckRow {
  std::string claim;
  double theory = 0.0;
  double simulation = 0.0;
  double tolerance = 0.0;  ///< |simulation − theory| allowed (or the one-sided margin)
  bool pass = false;
};

/// Welford mean and standard error.
struct Mean {
  double n = 0.0;
  double mean = 0.0;
  double m2 = 0.0;
  void add(double x) {
    n += 1.0;
    const double d = x - mean;
    mean += d / n;
    m2 += d * (x - mean);
  }
  [[nodiscard]] double se() const { return n > 1.0 ? std::sqrt(m2 / (n - 1.0) / n) : 0.0; }
};

/// A uniform draw in [0, 1) from 53 bits of a SplitMix64 stream (the same numbers on every
/// platform, unlike the standard distributions).
class Draws {
 public:
  explicit Draws(std::uint64_t seed) : state_(seed) {}
  double uniform() {
    std::uint64_t z = (state_ += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30U)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27U)) * 0x94d049bb133111ebULL;
    z ^= z >> 31U;
    return static_cast<double>(z >> 11U) * 0x1.0p-53;
  }
  /// An integer in [lo, hi].
  int between(int lo, int hi) {
    return lo + static_cast<int>(uniform() * static_cast<double>(hi - lo + 1));
  }

 private:
  std::uint64_t state_;
};

/// Two-sided: passes when |sim − theory| ≤ 4 se (the row's tolerance).
CheckRow two_sided(std::string claim, double theory, double sim, double se);

/// Uncoded (d = 1) or FRC with groups of d, of n workers.
std::shared_ptr<const codes::GradientCode> frc_or_uncoded(int n, int d);

/// Simulated mean iteration time (and its SE) of a scheme on the delay-only fast path, workers
/// of shift 1 and rate 1 at the code's loads.
Mean simulate_time(const std::shared_ptr<const codes::GradientCode>& code,
                   const std::shared_ptr<const sim::StoppingRule>& rule,
                   sim::TailScaling tail,
                   std::uint64_t iterations,
                   std::uint64_t seed);

/// A least-squares config on Gaussian data with shifted-exponential delays (Model A).
nlohmann::json convergence_config(int rows, int features, double l2, int n, int iterations);

// check_iteration_time.cpp: E[T] of the codes and rules, anytime minibatch, multi-message
// completion, the "finish" policy, Markov stragglers, time per update.
void iteration_time_rows(bool quick, std::vector<CheckRow>& rows);
void anytime_rows(bool quick, std::vector<CheckRow>& rows);
void multi_message_rows(bool quick, std::vector<CheckRow>& rows);
void policy_rows(bool quick, std::vector<CheckRow>& rows);
void persistent_rows(bool quick, std::vector<CheckRow>& rows);
void update_time_rows(std::vector<CheckRow>& rows);

// check_time_optimal.cpp: the time-optimal methods' time per update (Rennala, Malenia, Ringmaster,
// MindFlayer) under the fixed model (exact to rounding, bounds on every update) and under
// shifted-exponential delays (within 4 s.e.).
void time_optimal_rows(bool quick, std::vector<CheckRow>& rows);

// check_collectives.cpp: E[T] of collective runs (sim/theory/collective_theory.h) on seeded
// random configurations of every all-reduce kind, rules all, first_r and deadline and
// DropCompute, shifted-exponential and heterogeneous delays, against the event engine running
// the schedules: exact forms within 4 s.e., bounds each within 4 s.e. on its side.
void collective_rows(bool quick, std::vector<CheckRow>& rows);

// check_codes.cpp: group erasure q, heterogeneity-aware loads.
void erasure_rows(bool quick, std::vector<CheckRow>& rows);
void proportional_rows(bool quick, std::vector<CheckRow>& rows);
void proportional_cyclic_rows(bool quick, std::vector<CheckRow>& rows);

// check_scaling.cpp: order statistics up to 2^30 workers, the speedup as n doubles (speedup.csv).
void order_statistics_rows(bool quick, std::vector<CheckRow>& rows);
void speedup_rows(bool quick, std::vector<CheckRow>& rows, const std::filesystem::path& out);

// check_estimator.cpp: the coded gradient estimator, ErasureHead's bound (bound.csv) and floor.
void estimator_rows(bool quick, std::vector<CheckRow>& rows);
void bound_rows(bool quick, std::vector<CheckRow>& rows, const std::filesystem::path& out);
void floor_rows(bool quick, std::vector<CheckRow>& rows);

// check_convergence.cpp: the coded bound, the exact least-squares curve (exact_curve.csv), the
// logistic theorem rows.
void coded_bound_rows(bool quick, std::vector<CheckRow>& rows);
void exact_curve_rows(bool quick, std::vector<CheckRow>& rows, const std::filesystem::path& out);
void logistic_rows(bool quick, std::vector<CheckRow>& rows);

}  // namespace stragglersim::experiments::check
