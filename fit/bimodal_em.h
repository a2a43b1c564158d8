#pragma once
// EM for the bimodal family (fit/delay_fit.h): f(t) = (1−π)λe^{−λ(t−a)} + π(λ/κ)e^{−λ(t/κ−a)}
// [t ≥ κa], (λ, π) by EM at fixed (a, κ) with the closed-form M-step, κ by a profile search
// around it. Also the start of the Markov fit (fit/markov_fit.cpp). Used by the estimators of
// fit/ only.

#include <span>
#include <tuple>
#include <vector>

namespace stragglersim::sim {

struct Bimodal {
  double shift, rate, slow_probability, slowdown;
};

/// log L of the bimodal law `b` over `times`.
[[nodiscard]] double bimodal_log_likelihood(const Bimodal& b, std::span<const double> times);

/// EM for (λ, π) at the fixed shift and slowdown of `b`, at most `max_iterations` steps; returns
/// the final parameters, log L and the steps taken. κ is profiled outside: EM cannot raise it
/// past a time with zero slow responsibility (the slow component's support starts at κa).
std::tuple<Bimodal, double, int> bimodal_em(Bimodal b,
                                            std::span<const double> times,
                                            int max_iterations);

/// The profile search of the bimodal fit: a κ grid on sorted times `grid` (EM for (λ, π) at
/// each), then on sorted times `local` (with the same smallest time) Brent around the best κ and
/// EM to convergence there. Returns the estimate, log L and EM's steps.
std::tuple<Bimodal, double, int> search_bimodal(const std::vector<double>& grid,
                                                const std::vector<double>& local);

/// The bimodal estimate on every time from the search sample's `start`: EM at the sample's κ,
/// then κ by Brent within ±0.1 of log κ at that (λ, π) (one pass per step), then EM again; each EM
/// at most kPolishPasses passes. Returns the estimate, its log L and the EM passes taken.
std::tuple<Bimodal, double, int> polish_bimodal(Bimodal start, const std::vector<double>& sorted);

}  // namespace stragglersim::sim
