#include "fit/profile_likelihood.h"

#include <algorithm>
#include <cmath>

#include "fit/degenerate_fit.h"

namespace stragglersim::sim {

ProfiledShift profile_shift(double low,
                            const std::function<double(double)>& negative,
                            const std::function<double(double)>* polish) {
  constexpr int kGrid = 81;
  const double u_low = std::log(1e-8);
  const auto shift_at = [&](double u) { return low * -std::expm1(u); };
  double best_u = 0.0;
  double best = kInf;
  for (int i = 0; i < kGrid; ++i) {
    const double u = u_low * (1.0 - static_cast<double>(i) / (kGrid - 1));
    const double v = negative(shift_at(u));
    if (v < best) {
      best = v;
      best_u = u;
    }
  }
  const double step = -u_low / (kGrid - 1);
  const auto [u, value] = brent_minimum([&](double v) { return negative(shift_at(v)); },
                                        std::max(u_low, best_u - step),
                                        std::min(0.0, best_u + step),
                                        50);
  double chosen = value < best ? u : best_u;
  if (polish != nullptr) {
    const double start = (*polish)(shift_at(chosen));
    const auto [v, polished] = brent_minimum([&](double w) { return (*polish)(shift_at(w)); },
                                             std::max(u_low, chosen - step),
                                             std::min(0.0, chosen + step),
                                             30);
    chosen = polished < start ? v : chosen;
  }
  return {shift_at(chosen), chosen <= u_low + 1e-3 * step};
}

ProfiledShift profile_shift_over(
    const std::vector<double>& sorted,
    const std::function<double(const std::vector<double>&, double)>& log_likelihood) {
  const std::vector<double> sample = search_sample(sorted);
  const std::function<double(double)> on_sample = [&](double c) {
    return -log_likelihood(sample, c);
  };
  const std::function<double(double)> on_all = [&](double c) { return -log_likelihood(sorted, c); };
  return profile_shift(
      sorted.front(), on_sample, sample.size() < sorted.size() ? &on_all : nullptr);
}

Excess excess_over(const std::vector<double>& sorted, double c) {
  Excess e;
  e.log_x.reserve(sorted.size());
  for (const double t : sorted) {
    e.log_x.push_back(std::log(t - c));
    e.mean += t - c;
    e.mean_log += e.log_x.back();
  }
  e.mean /= static_cast<double>(sorted.size());
  e.mean_log /= static_cast<double>(sorted.size());
  return e;
}

/// The checks shared by the three-parameter shifted families; empty when they can be fitted.
std::string shifted_family_problem(const std::vector<double>& sorted) {
  if (sorted.size() < 3 || sorted.front() == sorted.back()) {
    return "needs at least three distinct times";
  }
  if (sorted.front() <= 0.0) {
    return "needs every time > 0 (the shift is >= 0)";
  }
  return "";
}

FamilyFit fit_profiled(
    const ShiftedFamily& family,
    std::span<const double> times,
    const std::function<double(const std::vector<double>&, const Eigen::VectorXd&)>& ll,
    const std::function<AtShift(const std::vector<double>&, double)>& at,
    const std::function<double(const Eigen::Vector3d&, double)>& tail_cdf) {
  const std::vector<double> sorted = sorted_copy(times);
  if (const std::string why = shifted_family_problem(sorted); !why.empty()) {
    return unfitted(family.name, why);
  }
  const ProfiledShift c = profile_shift_over(
      sorted,
      [&](const std::vector<double>& data, double v) { return at(data, v).log_likelihood; });
  const AtShift best = at(sorted, c.shift);
  const Eigen::Vector3d x(c.shift, best.first, best.second);
  const LogLikelihood log_l = [&](const Eigen::VectorXd& y) { return ll(sorted, y); };
  const auto se = standard_errors(log_l, x);
  FamilyFit fit;
  fit.family = family.name;
  fit.parameters = {
      {"shift", x(0), se[0]}, {family.keys[0], x(1), se[1]}, {family.keys[1], x(2), se[2]}};
  fit.parameter_count = 3;
  if (c.at_bound) {
    add_flag(fit, "shift at the smallest time (the search bound; the tail's scale collapses)");
  }
  finish(fit, log_l(x), sorted, [&](double t) { return t <= x(0) ? 0.0 : tail_cdf(x, t - x(0)); });
  return fit;
}

}  // namespace stragglersim::sim
