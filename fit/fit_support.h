#pragma once
// The numerics every delay-family estimator shares (fit/delay_fit.h): standard errors from the
// observed information, the deterministic search sample of large traces, a bounded Brent search,
// the shifted exponential's CDF, and the log L / AIC / KS bookkeeping of a fitted family. Used by
// the estimators of fit/ only.

#include <Eigen/Core>
#include <boost/math/tools/minima.hpp>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <limits>
#include <optional>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "fit/delay_fit.h"

namespace stragglersim::sim {

inline constexpr double kInf = std::numeric_limits<double>::infinity();
/// Relative change of log L below which EM and alternating maximisation stop.
inline constexpr double kTolerance = 1e-10;

using LogLikelihood = std::function<double(const Eigen::VectorXd&)>;

/// sqrt(diag((−H)⁻¹)) of the log-likelihood at `x` by central differences; nullopt entries when
/// −H is not positive definite there (a boundary optimum).
[[nodiscard]] std::vector<std::optional<double>> standard_errors(const LogLikelihood& ll,
                                                                 const Eigen::VectorXd& x);

/// `times` in increasing order.
[[nodiscard]] std::vector<double> sorted_copy(std::span<const double> times);

/// Traces of more times than this are searched on a sample of this many and the estimate is
/// then polished on every time (docs/fit.md "Large traces"): the grids and profile searches
/// cost hundreds of passes over the data, the polish a few dozen.
inline constexpr std::size_t kSearchSample = 4096;
/// The bimodal and Markov fits profile a boundary parameter (κ, b) whose log-likelihood jumps
/// at every time: their grid runs on the search sample, the local search around its best and EM
/// to convergence on a sample of this many times (every time when there are no more), then,
/// beyond it, a polish on every time.
inline constexpr std::size_t kLocalSearchLimit = 32768;
/// At most this many EM (Baum–Welch) passes over every time in a polish; each starts at the
/// sample's estimate, within its sampling error of the optimum.
inline constexpr int kPolishPasses = 25;

/// Every ((n − 1)/(m − 1))-th order statistic of `sorted` (the first and the last included), m =
/// `size`; all of `sorted` when it is no larger. A deterministic sample with the trace's
/// quantiles and its smallest time (the support of the shifted families).
[[nodiscard]] std::vector<double> search_sample(const std::vector<double>& sorted,
                                                std::size_t size = kSearchSample);

/// Every worker's times in one sorted sample.
[[nodiscard]] std::vector<double> sorted_pool(const std::vector<std::vector<double>>& sequences);

/// Fills log L, AIC and the KS test of a fitted family.
void finish(FamilyFit& fit,
            double log_likelihood,
            const std::vector<double>& sorted,
            const std::function<double(double)>& cdf);

/// A family not fitted, and why.
[[nodiscard]] FamilyFit unfitted(const std::string& family, std::string problem);

/// P(T ≤ t) of a shifted exponential (Boost.Math).
[[nodiscard]] double shifted_exponential_cdf(double shift, double rate, double t);

/// Boost's Brent minimum of `f` on [low, high] to `bits` bits, in at most kBrentSteps
/// evaluations, a NaN value counting as +inf: unbounded, the search cycled forever on the NaN
/// log-likelihoods of a trace holding a time of 1e308 (`fit` hung).
inline constexpr std::uintmax_t kBrentSteps = 500;

template <typename F>
std::pair<double, double> brent_minimum(F&& f, double low, double high, int bits) {
  std::uintmax_t steps = kBrentSteps;
  return boost::math::tools::brent_find_minima(
      [&](double v) {
        const double y = f(v);
        return std::isnan(y) ? kInf : y;
      },
      low,
      high,
      bits,
      steps);
}

/// Runs every task once, on this thread and one more, each taking the next task not yet taken;
/// rethrows the exception of the first task (in order) that threw, after all have ended.
void run_on_two_threads(const std::vector<std::function<void()>>& tasks);

}  // namespace stragglersim::sim
