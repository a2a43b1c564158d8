// Model selection (fit/delay_fit.h, fit_delay_models): every family fitted side by side, guarded
// against non-finite estimates, and the smallest AIC among the eligible ones. Each family's
// estimator is in fit/<family>_fit.cpp.

#include "fit/delay_fit.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <stdexcept>
#include <utility>

#include "fit/degenerate_fit.h"
#include "fit/fit_support.h"
#include "fit/heterogeneous_markov_fit.h"
#include "models/base/invariant.h"

namespace stragglersim::sim {
namespace {

/// A family fitted by `fit`, or not fitted when its estimate is not finite: times near 1e308
/// overflow the sums and moments of the estimators (a Pareto shape of 0, an infinite log L), and
/// Boost.Math refuses such parameters with std::domain_error. No family is ranked on them.
template <typename Fit>
FamilyFit guarded(const std::string& family, Fit&& fit) {
  constexpr const char* kProblem =
      "estimate not finite (times too large or too spread for double precision)";
  FamilyFit f;
  try {
    f = std::forward<Fit>(fit)();
  } catch (const std::domain_error&) {
    return unfitted(family, kProblem);
  } catch (const std::overflow_error&) {
    return unfitted(family, kProblem);
  }
  if (!f.fitted()) {
    return f;
  }
  bool finite = std::isfinite(f.log_likelihood) && std::isfinite(f.aic) &&
                std::isfinite(f.ks.statistic) && std::isfinite(f.ks.p_value);
  for (const auto& p : f.parameters) {
    finite = finite && std::isfinite(p.value);
  }
  for (const double c : f.factors) {
    finite = finite && std::isfinite(c);
  }
  return finite ? f : unfitted(family, kProblem);
}

/// Picks the smallest AIC among the fits that may be chosen and says why (DelayFitReport).
void choose_best(DelayFitReport& report) {
  std::vector<std::string> excluded;
  for (std::size_t i = 0; i < report.fits.size(); ++i) {
    const FamilyFit& f = report.fits[i];
    if (!f.fitted()) {
      continue;
    }
    // Per-worker factors only when the test of equal rates rejects: AIC alone would let a
    // handful of noisy factors win on a large homogeneous sample.
    if (f.family.starts_with("heterogeneous") && !report.heterogeneity.heterogeneous()) {
      excluded.push_back(f.family + " (equal rates not rejected)");
      continue;
    }
    if (f.degenerate()) {
      excluded.push_back(f.family + " (degenerate)");
      continue;
    }
    if (!report.best || f.aic < report.fits[*report.best].aic) {
      report.best = i;
    }
  }
  if (!report.best) {
    report.choice = "no family fitted without a degenerate flag";
    return;
  }
  report.every_family_rejected =
      std::all_of(report.fits.begin(), report.fits.end(), [](const FamilyFit& f) {
        return !f.fitted() || f.ks.p_value < kRejectingKsP;
      });
  report.choice =
      fmt::format("{}: smallest AIC among the fitted families", report.fits[*report.best].family);
  if (!excluded.empty()) {
    report.choice += fmt::format("; not eligible: {}", fmt::join(excluded, ", "));
  }
}

}  // namespace

double FamilyFit::value(const std::string& name) const {
  for (const auto& p : parameters) {
    if (p.name == name) {
      return p.value;
    }
  }
  STRAGGLERSIM_ASSERT(false, "no such fitted parameter: " + name);
  return 0.0;
}

DelayFitReport fit_delay_models(const std::vector<std::vector<double>>& sequences, bool ordered) {
  DelayFitReport report;
  report.workers = static_cast<int>(sequences.size());
  report.ordered = ordered;
  std::vector<double> pooled;
  for (const auto& s : sequences) {
    pooled.insert(pooled.end(), s.begin(), s.end());
  }
  report.observations = pooled.size();
  std::sort(pooled.begin(), pooled.end());
  const std::string unordered = "needs iteration order (an iteration column)";
  const MedianScaled start = ordered ? median_scaled(sequences) : MedianScaled{};
  // Each family (and the chain of the median-scaled times, the heterogeneous Markov fit's first
  // start) is a task writing its own slot; two threads take them in this order, the slowest
  // first. The fits are independent, so the report is the same bytes on one core or two.
  constexpr std::size_t kFamilies = 9;
  std::vector<FamilyFit> fits(kFamilies);
  FamilyFit scaled_chain;
  const std::vector<std::function<void()>> tasks = {
      [&] {
        fits[6] = ordered ? guarded("markov", [&] { return fit_markov(sequences); })
                          : unfitted("markov", unordered);
      },
      [&] {
        scaled_chain =
            !ordered || !start.problem.empty()
                ? FamilyFit{}
                : guarded("heterogeneous_markov", [&] { return fit_markov(start.scaled); });
      },
      [&] { fits[4] = guarded("weibull", [&] { return fit_weibull(pooled); }); },
      [&] { fits[5] = guarded("bimodal", [&] { return fit_bimodal(pooled); }); },
      [&] { fits[3] = guarded("gamma", [&] { return fit_gamma(pooled); }); },
      [&] { fits[2] = guarded("lognormal", [&] { return fit_lognormal(pooled); }); },
      [&] { fits[1] = guarded("pareto", [&] { return fit_pareto(pooled); }); },
      [&] {
        fits[0] = guarded("shifted_exponential", [&] { return fit_shifted_exponential(pooled); });
      },
      [&] { fits[7] = guarded("heterogeneous", [&] { return fit_heterogeneous(sequences); }); },
  };
  run_on_two_threads(tasks);
  if (!ordered) {
    fits[8] = unfitted("heterogeneous_markov", unordered);
  } else if (!start.problem.empty()) {
    fits[8] = unfitted("heterogeneous_markov", start.problem);
  } else if (!scaled_chain.fitted()) {
    fits[8] = unfitted("heterogeneous_markov", scaled_chain.problem);
  } else {
    fits[8] = guarded("heterogeneous_markov", [&] {
      return heterogeneous_markov_from(sequences, start.factors, scaled_chain, fits[6]);
    });
  }
  const double resolution = time_resolution(pooled);
  for (FamilyFit& f : fits) {
    flag_runaway_rates(f, resolution);
  }
  report.fits = std::move(fits);
  report.heterogeneity = test_equal_rates(sequences);
  choose_best(report);
  return report;
}

}  // namespace stragglersim::sim
