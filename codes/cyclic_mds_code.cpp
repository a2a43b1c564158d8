#include "codes/cyclic_mds_code.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <numbers>

#include "codes/cyclic_repetition_code.h"
#include "models/base/invariant.h"

namespace stragglersim::codes {
namespace {

/// p ← p · (c0 + c1 x + c2 x²), coefficients in ascending order.
void multiply(std::vector<double>& p, double c0, double c1, double c2) {
  std::vector<double> out(p.size() + 2, 0.0);
  for (std::size_t t = 0; t < p.size(); ++t) {
    out[t] += c0 * p[t];
    out[t + 1] += c1 * p[t];
    out[t + 2] += c2 * p[t];
  }
  while (out.size() > 1 && out.back() == 0.0) {
    out.pop_back();
  }
  p = std::move(out);
}

Eigen::MatrixXd mds_assignment(int n, const std::vector<double>& g) {
  const int sigma = static_cast<int>(g.size()) - 1;
  Eigen::MatrixXd b = Eigen::MatrixXd::Zero(n, n);
  for (int i = 0; i < n; ++i) {
    for (int t = 0; t <= sigma; ++t) {
      b(i, (i + t) % n) = g[static_cast<std::size_t>(t)];
    }
  }
  return b;
}

}  // namespace

int CyclicMdsCode::effective_redundancy(int workers, int s) {
  STRAGGLERSIM_ASSERT(workers >= 1 && s >= 0 && s < workers, "cyclic MDS needs 0 <= s < n");
  if (s == 0 || (workers - s) % 2 == 1) {
    return s;
  }
  STRAGGLERSIM_ASSERT(s + 1 < workers, "cyclic MDS with n - s even needs s + 1 < n");
  return s + 1;
}

std::vector<double> CyclicMdsCode::generator_polynomial(int workers, int sigma) {
  STRAGGLERSIM_ASSERT(sigma >= 0 && sigma < workers, "cyclic MDS needs 0 <= sigma < n");
  std::vector<double> g{1.0};
  if (sigma == 0) {
    return g;
  }
  STRAGGLERSIM_ASSERT((workers - sigma) % 2 == 1, "real cyclic MDS needs n - sigma odd");
  const int lo = (workers - sigma + 1) / 2;
  const int hi = (workers + sigma - 1) / 2;
  // Pair ω^j with its conjugate ω^{n−j}: (x − ω^j)(x − ω^{−j}) = x² − 2cos(2πj/n)x + 1, so g is
  // formed in real arithmetic; the self-conjugate root ω^{n/2} = −1 (n even) gives (x + 1).
  for (int j = lo; j <= hi; ++j) {
    const int partner = workers - j;
    if (partner == j) {
      multiply(g, 1.0, 1.0, 0.0);
    } else if (j < partner) {
      const double angle =
          2.0 * std::numbers::pi * static_cast<double>(j) / static_cast<double>(workers);
      multiply(g, 1.0, -2.0 * std::cos(angle), 1.0);
    }
  }
  STRAGGLERSIM_ASSERT(static_cast<int>(g.size()) == sigma + 1, "generator degree mismatch");
  double largest = 0.0;
  for (const double c : g) {
    largest = std::max(largest, std::abs(c));
  }
  for (double& c : g) {
    c /= largest;
  }
  return g;
}

Validation CyclicMdsCode::Options::validate() const {
  if (auto v = options_check::first_of({one_partition_per_worker("cyclic_mds", workers, partitions),
                                        options_check::integer_in_range("s", s, 0, workers - 1)})) {
    return v;
  }
  if ((workers - s) % 2 == 0 && s + 1 >= workers) {
    return Violation{"s",
                     "no real cyclic MDS code: n − s is even and s + 1 leaves no worker",
                     fmt::format("s < {} for workers = {}", workers - 1, workers)};
  }
  return std::nullopt;
}

CyclicMdsCode::CyclicMdsCode(const Options& options)
    : CyclicMdsCode(options_check::require_valid(options).workers, options.s) {}

CyclicMdsCode::CyclicMdsCode(int workers, int s)
    : CyclicMdsCode(workers, s, effective_redundancy(workers, s)) {}

CyclicMdsCode::CyclicMdsCode(int workers, int requested, int sigma)
    : GradientCode(mds_assignment(workers, generator_polynomial(workers, sigma))),
      requested_(requested),
      sigma_(sigma),
      generator_(generator_polynomial(workers, sigma)) {}

bool CyclicMdsCode::decodable(std::span<const int> heard) const {
  if (distinct_workers(heard, workers()) >= workers() - sigma_) {
    return true;
  }
  // Fewer workers can still decode for this structured code (e.g. n = 8, σ = 3, the four odd
  // workers: their rows span a 4-dimensional subspace of ⟨g⟩ that happens to contain 1). A
  // partition held by no worker heard rules it out without linear algebra; otherwise solve.
  std::vector<char> covered(static_cast<std::size_t>(workers()), 0);
  for (const int i : heard) {
    for (int t = 0; t <= sigma_; ++t) {
      covered[static_cast<std::size_t>((i + t) % workers())] = 1;
    }
  }
  if (std::find(covered.begin(), covered.end(), 0) != covered.end()) {
    return false;
  }
  return GradientCode::decodable(heard);
}

}  // namespace stragglersim::codes
