#include "fit/bimodal_em.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <numbers>

#include "fit/fit_support.h"
#include "models/base/stop_request.h"

namespace stragglersim::sim {
namespace {

/// log((1 − π) f₁(t)) and log(π f₂(t)) of the bimodal components, their logarithms of the
/// parameters computed once (a pass calls it for every time).
class BimodalTerms {
 public:
  explicit BimodalTerms(const Bimodal& b)
      : b_(b),
        normal_(std::log1p(-b.slow_probability) + std::log(b.rate)),
        slow_(std::log(b.slow_probability) + std::log(b.rate) - std::log(b.slowdown)),
        start_(b.slowdown * b.shift) {}

  [[nodiscard]] std::array<double, 2> operator()(double t) const {
    return {normal_ - b_.rate * (t - b_.shift),
            t >= start_ ? slow_ - b_.rate * (t / b_.slowdown - b_.shift) : -kInf};
  }

 private:
  Bimodal b_;
  double normal_, slow_, start_;
};

/// log(e^a + e^c) and the weight e^c / (e^a + e^c), with one exp and one log1p.
std::array<double, 2> log_total_and_weight(double a, double c) {
  if (c == -kInf) {
    return {a, 0.0};
  }
  const double d = c - a;
  const double e = std::exp(-std::abs(d));
  return {std::max(a, c) + std::log1p(e), d > 0.0 ? 1.0 / (1.0 + e) : e / (1.0 + e)};
}

}  // namespace

double bimodal_log_likelihood(const Bimodal& b, std::span<const double> times) {
  const BimodalTerms terms(b);
  double ll = 0.0;
  for (const double t : times) {
    const auto [a, c] = terms(t);
    ll += log_total_and_weight(a, c)[0];
  }
  return ll;
}

/// EM for (λ, π) at the fixed shift and slowdown of `b`, at most `max_iterations` steps; returns
/// the final parameters, log L and the steps taken. κ is profiled outside: EM cannot raise it
/// past a time with zero slow responsibility (the slow component's support starts at κa).
std::tuple<Bimodal, double, int> bimodal_em(Bimodal b,
                                            std::span<const double> times,
                                            int max_iterations) {
  const auto n = static_cast<double>(times.size());
  double previous = -kInf;
  int iteration = 0;
  for (; iteration < max_iterations; ++iteration) {
    models::throw_if_stop_requested();  // a pass over every time: a caller's Ctrl-C (Python)
    const BimodalTerms terms(b);
    double ll = 0.0;
    double w_sum = 0.0;
    double s1 = 0.0;
    double s2 = 0.0;
    for (const double t : times) {
      const auto [a, c] = terms(t);
      const auto [total, w] = log_total_and_weight(a, c);
      ll += total;
      w_sum += w;
      s1 += (1.0 - w) * (t - b.shift);
      s2 += w * t;
    }
    if (std::abs(ll - previous) <= kTolerance * std::max(1.0, std::abs(ll))) {
      previous = ll;
      break;
    }
    previous = ll;
    // λ maximises (n − W) log λ − λS₁ + W log(λ/κ) − λ(S₂/κ − aW); π = W/n, kept inside (0, 1).
    b.rate = n / (s1 + s2 / b.slowdown - b.shift * w_sum);
    b.slow_probability = std::clamp(w_sum / n, 1e-9, 1.0 - 1e-9);
  }
  return {b, previous, iteration};
}

/// The profile search of the bimodal fit: a κ grid on sorted times `grid` (EM for (λ, π) at
/// each), then on sorted times `local` (with the same smallest time) Brent around the best κ and
/// EM to convergence there. Returns the estimate, log L and EM's steps.
std::tuple<Bimodal, double, int> search_bimodal(const std::vector<double>& grid,
                                                const std::vector<double>& local) {
  const std::vector<double>& sorted = grid;
  const double shift = sorted.front();
  const double median = sorted[sorted.size() / 2];
  const double rate0 =
      median > shift ? std::numbers::ln2 / (median - shift) : 1.0 / (sorted.back() - shift);
  // Profile log L over κ: a log-spaced grid on [1, max t / a], then Brent around the best.
  const double kappa_high =
      std::max(2.0, shift > 0.0 ? sorted.back() / shift : sorted.back() / median);
  constexpr int kGrid = 40;
  Bimodal best{shift, rate0, 0.1, 1.0};
  double best_ll = -kInf;
  for (int i = 0; i < kGrid; ++i) {
    const double kappa = std::exp(std::log(kappa_high) * i / (kGrid - 1));
    const auto [b, ll, its] = bimodal_em({shift, rate0, 0.1, kappa}, sorted, 60);
    if (ll > best_ll) {
      best = b;
      best_ll = ll;
    }
  }
  const double step = std::log(kappa_high) / (kGrid - 1);
  const double centre = std::log(best.slowdown);
  const Bimodal from = best;
  const auto [log_kappa, negative] = brent_minimum(
      [&](double v) {
        Bimodal b = from;
        b.slowdown = std::exp(v);
        return -std::get<1>(bimodal_em(b, local, 60));
      },
      std::max(0.0, centre - step),
      centre + step,
      30);
  if (&local != &grid) {  // other times than the grid's: its best log L, again on `local`
    best_ll = std::get<1>(bimodal_em(best, local, 60));
  }
  if (-negative > best_ll) {
    best.slowdown = std::exp(log_kappa);
  }
  return bimodal_em(best, local, 2000);
}

/// The bimodal estimate on every time from the search sample's `start`: EM at the sample's κ,
/// then κ by Brent within ±0.1 of log κ at that (λ, π) (one pass per step), then EM again; each EM
/// at most kPolishPasses passes. Returns the estimate, its log L and the EM passes taken.
std::tuple<Bimodal, double, int> polish_bimodal(Bimodal start, const std::vector<double>& sorted) {
  // Named, not structured bindings: the lambdas below capture them (C++20 allows it; Clang 14,
  // which clang-tidy runs on, does not).
  Bimodal b{};
  double ll = 0.0;
  int passes = 0;
  std::tie(b, ll, passes) = bimodal_em(start, sorted, kPolishPasses);
  const double centre = std::log(b.slowdown);
  const auto [log_kappa, negative] = brent_minimum(
      [&](double v) {
        Bimodal at = b;
        at.slowdown = std::exp(v);
        return -bimodal_log_likelihood(at, sorted);
      },
      std::max(0.0, centre - 0.1),
      centre + 0.1,
      30);
  if (-negative > bimodal_log_likelihood(b, sorted)) {
    b.slowdown = std::exp(log_kappa);
  }
  const auto [polished, polished_ll, more] = bimodal_em(b, sorted, kPolishPasses);
  // EM's log L is the one before its last step: the returned estimate's own, recomputed.
  return {polished, bimodal_log_likelihood(polished, sorted), passes + more};
}

}  // namespace stragglersim::sim
