#include "codes/proportional_cyclic_code.h"

#include <fmt/format.h>

#include <Eigen/LU>
#include <boost/random/mersenne_twister.hpp>
#include <boost/random/normal_distribution.hpp>
#include <cmath>

#include "codes/cyclic_repetition_code.h"
#include "codes/proportional_code.h"
#include "models/base/invariant.h"

namespace stragglersim::codes {
namespace {

int partitions_of(const ProportionalCyclicCode::Options& o) {
  return o.partitions == 0 ? o.workers : o.partitions;
}

/// B (n × k) of the options: the loads, the folded supports and the null-space coefficients.
Eigen::MatrixXd proportional_cyclic_assignment(const ProportionalCyclicCode::Options& o) {
  const int n = o.workers;
  const int k = partitions_of(o);
  const int s = o.s;
  std::vector<double> speeds;
  speeds.reserve(o.factors.size());
  for (const double f : o.factors) speeds.push_back(1.0 / f);
  const std::vector<int> loads = ProportionalCyclicCode::capped_apportion(speeds, k * (s + 1), k);

  // holders[j]: the s + 1 workers of partition j, in worker order (slot order).
  std::vector<std::vector<int>> holders(static_cast<std::size_t>(k));
  std::int64_t slot = 0;
  for (int i = 0; i < n; ++i) {
    for (int t = 0; t < loads[static_cast<std::size_t>(i)]; ++t, ++slot) {
      holders[static_cast<std::size_t>(slot % k)].push_back(i);
    }
  }

  Eigen::MatrixXd b = Eigen::MatrixXd::Zero(n, k);
  if (s == 0) {
    for (int j = 0; j < k; ++j) b(holders[static_cast<std::size_t>(j)].front(), j) = 1.0;
    return b;
  }
  // H is drawn column by column, row by row, so the stream order is fixed.
  boost::random::mt19937_64 engine(o.seed);
  boost::random::normal_distribution<double> normal(0.0, 1.0);
  Eigen::MatrixXd h(s, n);
  for (int i = 0; i < n; ++i) {
    for (int r = 0; r < s; ++r) h(r, i) = normal(engine);
  }
  // Column j: [1ᵀ; H_{:, S_j}] v = e₀, v on the holders S_j.
  Eigen::MatrixXd system(s + 1, s + 1);
  Eigen::VectorXd unit = Eigen::VectorXd::Zero(s + 1);
  unit(0) = 1.0;
  for (int j = 0; j < k; ++j) {
    const std::vector<int>& on = holders[static_cast<std::size_t>(j)];
    STRAGGLERSIM_ASSERT(static_cast<int>(on.size()) == s + 1, "every partition has s + 1 holders");
    for (int t = 0; t <= s; ++t) {
      system(0, t) = 1.0;
      system.block(1, t, s, 1) = h.col(on[static_cast<std::size_t>(t)]);
    }
    // A generic Gaussian system is invertible; full pivoting keeps the solve as accurate as it
    // allows.
    const Eigen::VectorXd v = system.fullPivLu().solve(unit);
    for (int t = 0; t <= s; ++t) b(on[static_cast<std::size_t>(t)], j) = v(t);
  }
  return b;
}

}  // namespace

Validation ProportionalCyclicCode::Options::validate() const {
  if (auto v = options_check::integer_in_range("s", s, 0, workers - 1)) {
    return v;
  }
  const int k = partitions_of(*this);
  if (k < 1 || static_cast<std::int64_t>(k) * (s + 1) < workers) {
    return Violation{"partitions",
                     "too few partitions for the workers",
                     fmt::format("at least workers/(s + 1) = {} (one partition per worker), or 0 "
                                 "for k = n",
                                 (workers + s) / (s + 1))};
  }
  return worker_factors(workers, factors);
}

std::vector<int> ProportionalCyclicCode::capped_apportion(const std::vector<double>& weights,
                                                          int total,
                                                          int cap) {
  const auto w = static_cast<std::int64_t>(weights.size());
  STRAGGLERSIM_ASSERT(w >= 1 && cap >= 1 && total >= w && total <= w * cap,
                      "capped apportioning needs total in [shares, shares * cap]");
  std::vector<int> out(weights.size(), 0);
  std::vector<char> capped(weights.size(), 0);
  int left = total;
  // Water-filling: apportion among the shares not yet capped; any above `cap` is fixed there
  // and the rest apportioned again (each round caps one share at least, so at most w rounds).
  while (true) {
    std::vector<double> open;
    std::vector<std::size_t> index;
    for (std::size_t i = 0; i < weights.size(); ++i) {
      if (capped[i] == 0) {
        open.push_back(weights[i]);
        index.push_back(i);
      }
    }
    if (open.empty()) {
      STRAGGLERSIM_ASSERT(left == 0, "every share capped with units left");
      return out;
    }
    const std::vector<int> shares = ProportionalCode::apportion(open, left);
    bool over = false;
    for (std::size_t t = 0; t < shares.size(); ++t) {
      if (shares[t] > cap) {
        capped[index[t]] = 1;
        out[index[t]] = cap;
        left -= cap;
        over = true;
      }
    }
    if (!over) {
      for (std::size_t t = 0; t < shares.size(); ++t) out[index[t]] = shares[t];
      return out;
    }
  }
}

ProportionalCyclicCode::ProportionalCyclicCode(const Options& options)
    : GradientCode(proportional_cyclic_assignment(options_check::require_valid(options))),
      s_(options.s) {}

bool ProportionalCyclicCode::decodable(std::span<const int> heard) const {
  return distinct_workers(heard, workers()) >= workers() - s_;
}

}  // namespace stragglersim::codes
