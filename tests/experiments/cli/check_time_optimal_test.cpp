// The `check` rows of the time-optimal methods (experiments/cli/check_time_optimal.cpp): every row
// of the quick run holds, the rows' theory agrees with computations made here from scratch (a brute
// force over the completion times k·τ_i, Σλ_i), and the exact rows are sharp enough that a
// prediction off by a few per cent would fail them.

#include <fmt/format.h>

#include <algorithm>
#include <catch2/catch.hpp>
#include <cmath>
#include <string>
#include <vector>

#include "experiments/cli/check_claims.h"

namespace stragglersim::experiments::check {
namespace {

/// The row whose claim starts with `prefix` (exactly one).
const CheckRow& time_optimal_row(const std::vector<CheckRow>& rows, const std::string& prefix) {
  const CheckRow* found = nullptr;
  for (const auto& row : rows) {
    if (row.claim.rfind(prefix, 0) == 0) {
      REQUIRE(found == nullptr);
      found = &row;
    }
  }
  INFO(prefix);
  REQUIRE(found != nullptr);
  return *found;
}

/// min{t : Σ_i ⌊t/τ_i⌋ ≥ B} by trying every completion time k·τ_i, k ≤ B, in order.
double brute_force_collection(const std::vector<double>& tau, int batch) {
  std::vector<double> times;
  for (const double t : tau) {
    for (int k = 1; k <= batch; ++k) {
      times.push_back(k * t);
    }
  }
  std::sort(times.begin(), times.end());
  for (const double t : times) {
    int count = 0;
    for (const double s : tau) {
      count += static_cast<int>(std::floor(t / s * (1.0 + 1e-12)));
    }
    if (count >= batch) {
      return t;
    }
  }
  return -1.0;
}

std::vector<double> sqrt_times(int n) {
  std::vector<double> tau;
  for (int i = 1; i <= n; ++i) {
    tau.push_back(std::sqrt(static_cast<double>(i)));
  }
  return tau;
}

}  // namespace

TEST_CASE("check time-optimal: every row holds and the formulas are the ones derived here",
          "[experiments][check]") {
  std::vector<CheckRow> rows;
  time_optimal_rows(/*quick=*/true, rows);
  REQUIRE(rows.size() >= 40);
  for (const auto& row : rows) {
    INFO(row.claim << ": theory " << row.theory << ", simulation " << row.simulation
                   << ", tolerance " << row.tolerance);
    CHECK(row.pass);
    CHECK(row.tolerance > 0.0);
  }
  const std::vector<double> tau = sqrt_times(8);
  // Rennala with stop_stale: T*(B) from the brute force, to rounding; T*(4) = 2, T*(8) = √7.
  for (const int b : {4, 8, 20}) {
    const CheckRow& row =
        time_optimal_row(rows, fmt::format("T/update rennala stop_stale fixed sqrt n=8 B={}:", b));
    CHECK(row.theory == Approx(brute_force_collection(tau, b)).epsilon(1e-12));
    CHECK(row.simulation == Approx(row.theory).epsilon(1e-9));
  }
  CHECK(time_optimal_row(rows, "T/update rennala stop_stale fixed sqrt n=8 B=4:").theory ==
        Approx(2.0).epsilon(1e-12));
  CHECK(time_optimal_row(rows, "T/update rennala stop_stale fixed sqrt n=8 B=8:").theory ==
        Approx(std::sqrt(7.0)).epsilon(1e-12));
  // MindFlayer with t_i = 2.5 drops workers 7 and 8 (√7 > 2.5): the brute force over six.
  CHECK(time_optimal_row(rows, "T/update mindflayer stop_stale fixed sqrt n=8 B=8").theory ==
        Approx(brute_force_collection(sqrt_times(6), 8)).epsilon(1e-12));
  // Ringmaster without a limit: 1/Σ 1/√i.
  double rate = 0.0;
  for (const double t : tau) {
    rate += 1.0 / t;
  }
  CHECK(time_optimal_row(rows, "T/update ringmaster R=inf fixed sqrt n=8:").theory ==
        Approx(1.0 / rate).epsilon(1e-12));
  // Exponential delays: MindFlayer's B/Σλ_i and Ringmaster's 1/Σλ_i (stopping) are one rate.
  const CheckRow& mindflayer = time_optimal_row(rows, "T/update mindflayer stop_stale B=8");
  const CheckRow& ringmaster = time_optimal_row(rows, "T/update ringmaster R=3 stop_stale");
  CHECK(mindflayer.theory == Approx(8.0 * ringmaster.theory).epsilon(1e-12));
}

TEST_CASE("check time-optimal: a prediction off by 5 per cent fails its exact row",
          "[experiments][check]") {
  std::vector<CheckRow> rows;
  time_optimal_rows(/*quick=*/true, rows);
  int exact = 0;
  for (const auto& row : rows) {
    if (row.claim.find("exact") == std::string::npos) {
      continue;
    }
    ++exact;
    INFO(row.claim << ": theory " << row.theory << ", simulation " << row.simulation
                   << ", tolerance " << row.tolerance);
    for (const double factor : {0.95, 1.05}) {
      CHECK(std::abs(row.simulation - factor * row.theory) > row.tolerance);
    }
  }
  CHECK(exact >= 10);
}

}  // namespace stragglersim::experiments::check
