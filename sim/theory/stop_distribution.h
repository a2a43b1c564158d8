#pragma once
// P(Z ≤ t) of a scheme's stopping time from the per-worker CDFs
// (sim/theory/iteration_time_theory.h): the stop's shape (an order statistic, FRC decodable, FRC
// first_r_or_decodable, a deadline, as each rule's row of sim/theory/rule_theory.h gives it), the
// Poisson-binomial DP, the worker classes whose CDF is read once per point, and the work budget of
// the exact computation. Used by the theory of sim/theory/ only.

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <limits>
#include <span>
#include <utility>
#include <vector>

#include "sim/delays/delay_model.h"
#include "sim/theory/iteration_time_theory.h"

namespace stragglersim::sim {

inline constexpr double kInfinity = std::numeric_limits<double>::infinity();
inline constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
/// Cost of one CDF evaluation in DP operations (a Boost.Math CDF or two exp/log).
inline constexpr double kCdfOperations = 50.0;

inline std::size_t index(int i) { return static_cast<std::size_t>(i); }

/// What the stopping time is a function of, once scheme and rule are combined.
enum class StopShape { kOrderStatistic, kFrcDecodable, kFrcFirstROrDecodable, kDeadline };

struct Shape {
  StopShape kind = StopShape::kOrderStatistic;
  int order = 0;  ///< m of T_(m:n) for kOrderStatistic
};

/// The shape of the scheme's stop: its rule's row (rule_theory) for the scheme's code.
[[nodiscard]] Shape stop_shape(const SchemeDescription& s);

/// Operations of the exact computation, counted as it runs (one DP multiply-add is one; a CDF
/// evaluation kCdfOperations): past `limit` it throws WorkExceeded and the prediction falls back
/// to simulation. The count depends only on the inputs, never on the machine.
struct WorkExceeded {};

class WorkBudget {
 public:
  explicit WorkBudget(double limit) : limit_(limit) {}
  void charge(double operations) const {
    used_ += operations;
    if (used_ > limit_) {
      throw WorkExceeded{};
    }
  }
  [[nodiscard]] double used() const { return used_; }

 private:
  double limit_;
  mutable double used_ = 0.0;
};

/// Workers with equal marginals: class_of[i] indexes representative (its first worker) and
/// size. One class per worker when merging is off or finds more than kMaxClasses.
struct WorkerClasses {
  std::vector<int> class_of;
  std::vector<int> representative;
  std::vector<int> size;
  [[nodiscard]] int count() const { return static_cast<int>(representative.size()); }
};

/// P(at least r of the workers with arrival probabilities f (waiting probabilities w = 1 − f,
/// given separately for accuracy) have arrived): Poisson-binomial DP with the state "≥ r"
/// absorbing.
StopProbability at_least(std::span<const double> f,
                         std::span<const double> w,
                         std::span<const char> skip,
                         int r,
                         std::vector<double>& p);

/// Evaluates P(Z ≤ t) for one scheme and delay model, with scratch space for the DPs.
class StopDistribution {
 public:
  /// `classes` (optional) evaluates each class's CDF once per point; `budget` (optional)
  /// counts the work of every evaluation.
  StopDistribution(const SchemeDescription& scheme,
                   const DelayModel& delay,
                   const WorkerClasses* classes = nullptr,
                   const WorkBudget* budget = nullptr)
      : scheme_(scheme),
        delay_(delay),
        shape_(stop_shape(scheme)),
        classes_(classes),
        budget_(budget),
        f_(index(scheme.workers)),
        w_(index(scheme.workers)) {}

  void fill(double t) const {
    if (classes_ == nullptr) {
      for (int i = 0; i < scheme_.workers; ++i) {
        set_worker(i, t);
      }
      return;
    }
    class_f_.resize(index(classes_->count()));
    for (int c = 0; c < classes_->count(); ++c) {
      class_f_[index(c)] = delay_.cdf(classes_->representative[index(c)], t);
    }
    for (int i = 0; i < scheme_.workers; ++i) {
      set_arrived(i, class_f_[index(classes_->class_of[index(i)])]);
    }
  }

  /// DP operations of one evaluate() (CDF reads excluded).
  [[nodiscard]] double operations() const {
    const double n = scheme_.workers;
    switch (shape_.kind) {
      case StopShape::kOrderStatistic:
        return n * shape_.order;
      case StopShape::kDeadline:
        return n * n;
      case StopShape::kFrcDecodable:
        return n;
      case StopShape::kFrcFirstROrDecodable:
        return n / scheme_.d * (scheme_.r + 1.0) * (scheme_.d + 1.0) + n * scheme_.d;
    }
    return n;
  }

  /// Worker i's arrival probability becomes P(T_i ≤ t); the others keep theirs.
  void set_worker(int i, double t) const { set_arrived(i, delay_.cdf(i, t)); }

  /// Worker i has arrived with probability `f`.
  void set_arrived(int i, double f) const {
    f_[index(i)] = f;
    w_[index(i)] = 1.0 - f;
  }

  /// Every worker still waiting (P(T_i ≤ t) = 0 below every worker's support), no CDF read.
  void set_all_waiting() const {
    std::fill(f_.begin(), f_.end(), 0.0);
    std::fill(w_.begin(), w_.end(), 1.0);
  }

  [[nodiscard]] StopProbability operator()(double t) const {
    if (shape_.kind == StopShape::kDeadline && t >= scheme_.deadline) {
      return {1.0, 0.0};
    }
    fill(t);
    if (budget_ != nullptr) {
      const int reads = classes_ != nullptr ? classes_->count() : scheme_.workers;
      budget_->charge(reads * kCdfOperations + operations());
    }
    return evaluate();
  }

  /// P(Z ≤ t) from the arrival probabilities as they stand (fill or set_worker; no deadline
  /// check).
  [[nodiscard]] StopProbability evaluate() const {
    switch (shape_.kind) {
      case StopShape::kOrderStatistic:
        return at_least(f_, w_, {}, shape_.order, p_);
      case StopShape::kDeadline:
        return at_least(f_, w_, {}, scheme_.workers, p_);
      case StopShape::kFrcDecodable:
        return frc_decodable();
      case StopShape::kFrcFirstROrDecodable:
        return frc_first_r_or_decodable();
    }
    return {};
  }

 private:
  [[nodiscard]] StopProbability frc_decodable() const {
    double log_all_covered = 0.0;
    for (int g = 0; g < scheme_.workers / scheme_.d; ++g) {
      double erased = 1.0;
      for (int i = g * scheme_.d; i < (g + 1) * scheme_.d; ++i) {
        erased *= w_[index(i)];
      }
      log_all_covered += std::log1p(-erased);
    }
    return {std::exp(log_all_covered), -std::expm1(log_all_covered)};
  }

  // State after each group: (arrivals so far, capped at r) × (every group so far covered).
  [[nodiscard]] StopProbability frc_first_r_or_decodable() const {
    const int r = scheme_.r;
    const int d = scheme_.d;
    uncovered_.assign(index(r) + 1, 0.0);
    covered_.assign(index(r) + 1, 0.0);
    covered_[0] = 1.0;
    for (int g = 0; g < scheme_.workers / d; ++g) {
      const std::span<const double> fg(f_.data() + g * d, index(d));
      const std::span<const double> wg(w_.data() + g * d, index(d));
      group_count(fg, wg);
      next_uncovered_.assign(index(r) + 1, 0.0);
      next_covered_.assign(index(r) + 1, 0.0);
      for (int c = 0; c <= r; ++c) {
        const double u = uncovered_[index(c)];
        const double v = covered_[index(c)];
        if (u == 0.0 && v == 0.0) {
          continue;
        }
        for (int j = 0; j <= d; ++j) {
          const std::size_t to = index(std::min(r, c + j));
          const double pj = count_[index(j)];
          next_uncovered_[to] += u * pj;
          (j == 0 ? next_uncovered_ : next_covered_)[to] += v * pj;
        }
      }
      std::swap(uncovered_, next_uncovered_);
      std::swap(covered_, next_covered_);
    }
    double stopped = uncovered_[index(r)] + covered_[index(r)];
    double waiting = 0.0;
    for (int c = 0; c < r; ++c) {
      stopped += covered_[index(c)];
      waiting += uncovered_[index(c)];
    }
    return {stopped, waiting};
  }

  /// Distribution of the number of arrivals within one group.
  void group_count(std::span<const double> f, std::span<const double> w) const {
    count_.assign(f.size() + 1, 0.0);
    count_[0] = 1.0;
    for (std::size_t i = 0; i < f.size(); ++i) {
      for (std::size_t k = i + 1; k >= 1; --k) {
        count_[k] = count_[k] * w[i] + count_[k - 1] * f[i];
      }
      count_[0] *= w[i];
    }
  }

  const SchemeDescription& scheme_;
  const DelayModel& delay_;
  Shape shape_;
  const WorkerClasses* classes_;
  const WorkBudget* budget_;
  mutable std::vector<double> class_f_;
  mutable std::vector<double> f_;
  mutable std::vector<double> w_;
  mutable std::vector<double> p_;
  mutable std::vector<double> count_;
  mutable std::vector<double> uncovered_;
  mutable std::vector<double> covered_;
  mutable std::vector<double> next_uncovered_;
  mutable std::vector<double> next_covered_;
};

}  // namespace stragglersim::sim
