#include "sim/theory/time_optimal_theory.h"

#include <algorithm>
#include <boost/math/quadrature/gauss_kronrod.hpp>
#include <boost/math/special_functions/gamma.hpp>
#include <cmath>
#include <functional>
#include <queue>
#include <utility>

#include "models/base/invariant.h"

namespace stragglersim::sim {
namespace {

void check_tau(std::span<const double> tau, std::int64_t batch) {
  STRAGGLERSIM_ASSERT(!tau.empty(), "no worker");
  STRAGGLERSIM_ASSERT(batch >= 1, "batch below 1");
  for (const double t : tau) {
    STRAGGLERSIM_ASSERT(std::isfinite(t) && t > 0.0, "computation times must be finite and > 0");
  }
}

/// The completions of every worker merged in time order: k·τ_i as a product, so that two workers
/// finishing together are popped at one identical time.
class CompletionSweep {
 public:
  explicit CompletionSweep(std::span<const double> tau) : tau_(tau.begin(), tau.end()) {
    counts_.assign(tau_.size(), 0);
    for (std::size_t i = 0; i < tau_.size(); ++i) {
      heap_.emplace(tau_[i], i);
    }
  }
  /// Advances to the next completion time; returns it. Every worker finishing then is counted.
  double advance() {
    const double now = heap_.top().first;
    while (!heap_.empty() && heap_.top().first == now) {
      const std::size_t i = heap_.top().second;
      heap_.pop();
      ++counts_[i];
      heap_.emplace(static_cast<double>(counts_[i] + 1) * tau_[i], i);
    }
    return now;
  }
  [[nodiscard]] const std::vector<std::int64_t>& counts() const { return counts_; }

 private:
  using Entry = std::pair<double, std::size_t>;
  std::vector<double> tau_;
  std::vector<std::int64_t> counts_;
  std::priority_queue<Entry, std::vector<Entry>, std::greater<>> heap_;
};

/// P(M_i ≥ c), c = 0 … B, M_i = (N_i(t) − skip)⁺, N_i(t) the renewal count of Δ + scale·Exp(1)
/// intervals: P(N_i(t) ≥ c) = P(Gamma(c, scale) ≤ t − cΔ).
void at_least(double shift, double scale, int skip, double t, std::vector<double>& out) {
  out[0] = 1.0;
  for (std::size_t c = 1; c < out.size(); ++c) {
    const double cc = static_cast<double>(c) + static_cast<double>(skip);
    const double span = t - cc * shift;
    out[c] = span > 0.0 ? boost::math::gamma_p(cc, span / scale) : 0.0;
  }
}

/// P(Σ_i M_i < B) by convolving the workers' distributions truncated at B.
double fewer_than(const ShiftedExponentialWorkers& w, std::int64_t batch, int skip, double t) {
  const auto b = static_cast<std::size_t>(batch);
  std::vector<double> tail(b + 1);
  std::vector<double> one(b);
  std::vector<double> sum(b, 0.0);
  std::vector<double> next(b);
  sum[0] = 1.0;
  for (std::size_t i = 0; i < w.shift.size(); ++i) {
    at_least(w.shift[i], w.scale[i], skip, t, tail);
    for (std::size_t c = 0; c < b; ++c) {
      one[c] = tail[c] - tail[c + 1];
    }
    std::fill(next.begin(), next.end(), 0.0);
    for (std::size_t s = 0; s < b; ++s) {
      if (sum[s] == 0.0) {
        continue;
      }
      for (std::size_t c = 0; s + c < b; ++c) {
        next[s + c] += sum[s] * one[c];
      }
    }
    sum.swap(next);
  }
  double total = 0.0;
  for (const double p : sum) {
    total += p;
  }
  return std::clamp(total, 0.0, 1.0);
}

double inverse_sum(std::span<const double> tau) {
  double rate = 0.0;
  for (const double t : tau) {
    rate += 1.0 / t;
  }
  return 1.0 / rate;
}

}  // namespace

double equilibrium_time(std::span<const double> tau, std::int64_t batch, int stale) {
  check_tau(tau, batch);
  STRAGGLERSIM_ASSERT(stale >= 0, "stale below 0");
  std::vector<double> sorted(tau.begin(), tau.end());
  std::sort(sorted.begin(), sorted.end());
  double rate = 0.0;
  double best = kNoBound;
  for (std::size_t m = 1; m <= sorted.size(); ++m) {
    rate += 1.0 / sorted[m - 1];
    const double need =
        static_cast<double>(batch) + static_cast<double>(stale) * static_cast<double>(m);
    best = std::min(best, need / rate);
  }
  return best;
}

double equilibrium_time(std::span<const double> tau, std::int64_t batch) {
  return equilibrium_time(tau, batch, 1);
}

double collection_time(std::span<const double> tau, std::int64_t batch, int skip) {
  check_tau(tau, batch);
  STRAGGLERSIM_ASSERT(skip == 0 || skip == 1, "skip must be 0 or 1");
  CompletionSweep sweep(tau);
  for (;;) {
    const double now = sweep.advance();
    std::int64_t total = 0;
    for (const std::int64_t c : sweep.counts()) {
      total += std::max<std::int64_t>(c - skip, 0);
    }
    if (total >= batch) {
      return now;
    }
  }
}

double malenia_collection_time(std::span<const double> tau, std::int64_t s) {
  check_tau(tau, s);
  const double n = static_cast<double>(tau.size());
  // Σ 1/b_i ≤ n²/S with a relative slack of 1e-12 for the rounding of the sum.
  const double limit = n * n / static_cast<double>(s) * (1.0 + 1e-12);
  CompletionSweep sweep(tau);
  for (;;) {
    const double now = sweep.advance();
    double sum = 0.0;
    bool everyone = true;
    for (const std::int64_t c : sweep.counts()) {
      if (c == 0) {
        everyone = false;
        break;
      }
      sum += 1.0 / static_cast<double>(c);
    }
    if (everyone && sum <= limit) {
      return now;
    }
  }
}

std::optional<ShiftedExponentialWorkers> shifted_exponential_workers(const DelayModel& delays) {
  const auto shape = delays.shifted_exponential();
  if (!shape) {
    return std::nullopt;
  }
  const auto n = static_cast<std::size_t>(delays.workers());
  ShiftedExponentialWorkers w;
  w.shift.resize(n);
  w.scale.resize(n);
  for (std::size_t i = 0; i < n; ++i) {
    w.shift[i] = shape->worker_shift.empty()        ? shape->shift
                 : shape->worker_shift.size() == 1U ? shape->worker_shift[0]
                                                    : shape->worker_shift[i];
    w.scale[i] = shape->worker_scale.empty()        ? 1.0 / shape->rate
                 : shape->worker_scale.size() == 1U ? shape->worker_scale[0]
                                                    : shape->worker_scale[i];
    if (!(w.scale[i] > 0.0)) {
      return std::nullopt;
    }
  }
  return w;
}

double renewal_collection_mean(const ShiftedExponentialWorkers& workers,
                               std::int64_t batch,
                               int skip) {
  STRAGGLERSIM_ASSERT(!workers.shift.empty(), "no worker");
  STRAGGLERSIM_ASSERT(workers.shift.size() == workers.scale.size(), "one shift and scale each");
  STRAGGLERSIM_ASSERT(batch >= 1, "batch below 1");
  STRAGGLERSIM_ASSERT(skip == 0 || skip == 1, "skip must be 0 or 1");
  for (std::size_t i = 0; i < workers.shift.size(); ++i) {
    STRAGGLERSIM_ASSERT(workers.shift[i] >= 0.0 && workers.scale[i] > 0.0,
                        "delays need shift >= 0 and scale > 0");
  }
  const double pushes = static_cast<double>(batch) + static_cast<double>(skip);
  // Beyond `end` some worker alone has finished B + skip computations with probability
  // 1 − 1e-17: P(Σ M_i < B) ≤ 1e-17 there, and it decays exponentially.
  const double quantile = boost::math::gamma_q_inv(pushes, 1e-17);
  double end = kNoBound;
  for (std::size_t i = 0; i < workers.shift.size(); ++i) {
    end = std::min(end, pushes * workers.shift[i] + quantile * workers.scale[i]);
  }
  // Worker i's c-th completion becomes possible at t = cΔ_i, where P(N_i(t) ≥ c) starts as
  // (t − cΔ_i)^c: a jump of the first derivative for c = 1, of the c-th for c ≥ 2. The pieces break
  // where the integrand is not C² (c + skip ≤ 2); the smoother kinks are left to the adaptive
  // subdivision (with every kink a break, n·B pieces made a run of 32 workers and B = 64 take
  // minutes).
  std::vector<double> cuts{0.0, end};
  for (const double shift : workers.shift) {
    for (int c = 1; c + skip <= 2; ++c) {
      const double at = static_cast<double>(c + skip) * shift;
      if (shift > 0.0 && at < end) {
        cuts.push_back(at);
      }
    }
  }
  std::sort(cuts.begin(), cuts.end());
  cuts.erase(std::unique(cuts.begin(), cuts.end()), cuts.end());
  const auto f = [&](double t) { return fewer_than(workers, batch, skip, t); };
  using Rule = boost::math::quadrature::gauss_kronrod<double, 61>;
  // A first, non-adaptive pass estimates every piece and the whole; the adaptive pass then asks
  // each piece for an absolute error of 1e-12 of the whole (a relative 1e-12 on a piece where the
  // integrand is ~1e-17 is below its rounding and would only exhaust the subdivision depth).
  std::vector<double> rough(cuts.size() - 1, 0.0);
  double whole = 0.0;
  for (std::size_t s = 0; s + 1 < cuts.size(); ++s) {
    rough[s] = Rule::integrate(f, cuts[s], cuts[s + 1], 0, 0.0);
    whole += rough[s];
  }
  double total = 0.0;
  for (std::size_t s = 0; s + 1 < cuts.size(); ++s) {
    const double tolerance = std::clamp(1e-12 * whole / std::max(rough[s], 1e-300), 1e-12, 1e-2);
    total += Rule::integrate(f, cuts[s], cuts[s + 1], 15, tolerance);
  }
  return total;
}

std::optional<TimeOptimalPrediction> predict_time_optimal(const TimeOptimalParameters& parameters,
                                                          std::span<const double> tau) {
  check_tau(tau, parameters.batch);
  TimeOptimalPrediction p;
  switch (parameters.method) {
    case TimeOptimalMethod::kMindFlayer:
    case TimeOptimalMethod::kRennala: {
      std::vector<double> used(tau.begin(), tau.end());
      if (parameters.method == TimeOptimalMethod::kMindFlayer) {
        STRAGGLERSIM_ASSERT(parameters.cutoffs.size() == tau.size(), "one cut-off per worker");
        used.clear();
        for (std::size_t i = 0; i < tau.size(); ++i) {
          if (tau[i] <= parameters.cutoffs[i]) {
            used.push_back(tau[i]);
          }
        }
        if (used.empty()) {
          p.lower = p.upper = kNoBound;
          p.formula = "no worker within its cut-off";
          return p;
        }
      }
      p.lower = collection_time(used, parameters.batch, 0);
      p.paper_bound = 2.0 * equilibrium_time(used, parameters.batch);
      if (parameters.stop_stale) {
        p.upper = p.lower;
        p.formula = "T*(B) = min{t : sum floor(t/tau_i) >= B}";
      } else {
        p.upper = collection_time(used, parameters.batch, 1);
        p.formula = "T*(B) <= T <= min{t : sum (floor(t/tau_i) - 1)+ >= B}";
      }
      return p;
    }
    case TimeOptimalMethod::kMalenia:
      p.lower = malenia_collection_time(tau, parameters.batch);
      if (parameters.stop_stale) {
        p.upper = p.lower;
        p.formula = "min{t : all b_i >= 1, sum 1/b_i <= n^2/S}";
      } else {
        p.formula = "min{t : all b_i >= 1, sum 1/b_i <= n^2/S} (lower bound)";
      }
      return p;
    case TimeOptimalMethod::kRingmaster:
      p.lower = inverse_sum(tau);
      if (!parameters.max_delay) {
        p.upper = p.lower;
        p.formula = "1/sum(1/tau_i)";
        return p;
      }
      STRAGGLERSIM_ASSERT(*parameters.max_delay >= 1, "R below 1");
      {
        const double r = *parameters.max_delay;
        p.upper = collection_time(tau, *parameters.max_delay, 1) / r;
        p.paper_bound = 2.0 * equilibrium_time(tau, *parameters.max_delay) / r;
      }
      p.formula = "1/sum(1/tau_i) <= T <= min{t : sum (floor(t/tau_i) - 1)+ >= R}/R";
      return p;
  }
  return std::nullopt;
}

namespace {

/// Rennala with random delays: the renewal integral (exact with stop_stale) and its bounds.
TimeOptimalPrediction rennala_random(const TimeOptimalParameters& parameters,
                                     const ShiftedExponentialWorkers& workers,
                                     bool exponential) {
  TimeOptimalPrediction p;
  if (exponential) {
    // n Poisson streams, merged: B arrivals of a Poisson process of rate Σλ_i from a fresh start
    // (stop_stale restarts every worker, and a restarted exponential is as good as a busy one).
    double rate = 0.0;
    for (const double s : workers.scale) {
      rate += 1.0 / s;
    }
    p.lower = static_cast<double>(parameters.batch) / rate;
  } else {
    p.lower = renewal_collection_mean(workers, parameters.batch, 0);
  }
  if (parameters.stop_stale) {
    p.upper = p.lower;
    p.formula = exponential ? "B/sum(lambda_i)" : "integral of P(sum N_i(t) < B)";
  } else {
    p.upper = renewal_collection_mean(workers, parameters.batch, 1);
    p.formula = "integral of P(sum N_i(t) < B) <= T <= integral of P(sum (N_i(t) - 1)+ < B)";
  }
  return p;
}

/// Ringmaster with random delays: n renewal streams, exact for R = ∞ (and for computation
/// stopping with Δ = 0), a lower bound otherwise.
TimeOptimalPrediction ringmaster_random(const TimeOptimalParameters& parameters,
                                        const ShiftedExponentialWorkers& workers,
                                        bool exponential) {
  TimeOptimalPrediction p;
  double rate = 0.0;
  for (std::size_t i = 0; i < workers.shift.size(); ++i) {
    rate += 1.0 / (workers.shift[i] + workers.scale[i]);
  }
  p.lower = 1.0 / rate;
  if (parameters.max_delay) {
    STRAGGLERSIM_ASSERT(*parameters.max_delay >= 1, "R below 1");
  }
  if (!parameters.max_delay || (exponential && parameters.stop_stale)) {
    p.upper = p.lower;
    p.formula = "1/sum(1/E[X_i])";
  } else {
    p.formula = "1/sum(1/E[X_i]) (lower bound)";
  }
  return p;
}

}  // namespace

std::optional<TimeOptimalPrediction> predict_time_optimal(
    const TimeOptimalParameters& parameters, const ShiftedExponentialWorkers& workers) {
  STRAGGLERSIM_ASSERT(!workers.shift.empty() && workers.shift.size() == workers.scale.size(),
                      "one shift and scale per worker");
  const bool exponential =
      std::all_of(workers.shift.begin(), workers.shift.end(), [](double d) { return d == 0.0; });
  switch (parameters.method) {
    case TimeOptimalMethod::kRennala:
      return rennala_random(parameters, workers, exponential);
    case TimeOptimalMethod::kRingmaster:
      return ringmaster_random(parameters, workers, exponential);
    case TimeOptimalMethod::kMindFlayer:
      // Only Δ = 0: an attempt cut at t_i and redrawn costs exactly the t_i of Exp(λ_i) time it
      // ran (memoryless), so the successes of a worker are a Poisson stream of rate λ_i, as in
      // Rennala. With Δ > 0 the law of a sum of c truncated exponentials is needed, and its closed
      // form (inclusion–exclusion over the c terms) cancels catastrophically: left out.
      if (!exponential) {
        return std::nullopt;
      }
      STRAGGLERSIM_ASSERT(parameters.cutoffs.size() == workers.shift.size(),
                          "one cut-off per worker");
      for (const double c : parameters.cutoffs) {
        STRAGGLERSIM_ASSERT(c > 0.0, "cut-offs must be > 0");
      }
      return rennala_random(parameters, workers, true);
    case TimeOptimalMethod::kMalenia:
      return std::nullopt;
  }
  return std::nullopt;
}

std::optional<TimeOptimalPrediction> predict_time_optimal(const TimeOptimalParameters& parameters,
                                                          const DelayModel& delays) {
  const auto workers = shifted_exponential_workers(delays);
  if (!workers) {
    return std::nullopt;
  }
  return predict_time_optimal(parameters, *workers);
}

}  // namespace stragglersim::sim
