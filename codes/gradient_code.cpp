#include "codes/gradient_code.h"

#include <fmt/format.h>

#include <Eigen/QR>
#include <Eigen/SVD>
#include <algorithm>
#include <cmath>
#include <limits>

#include "models/base/invariant.h"

namespace stragglersim::codes {

Validation one_partition_per_worker(const char* code, int workers, int partitions) {
  if (partitions == 0 || partitions == workers) {
    return std::nullopt;
  }
  return Violation{"partitions",
                   fmt::format("code '{}' needs one partition per worker", code),
                   fmt::format("workers = {}", workers)};
}

CodeStructure GradientCode::structure() const {
  CodeStructure s;
  s.stragglers_tolerated = stragglers_tolerated();
  return s;
}

GradientCode::GradientCode(Eigen::MatrixXd assignment)
    : GradientCode(std::move(assignment), EmptyPartitions::kForbidden) {}

GradientCode::GradientCode(Eigen::MatrixXd assignment, EmptyPartitions empty)
    : workers_(static_cast<int>(assignment.rows())),
      partitions_(static_cast<int>(assignment.cols())),
      b_(std::move(assignment)) {
  STRAGGLERSIM_ASSERT(b_.rows() > 0 && b_.cols() > 0, "empty assignment matrix");
  supports_.resize(static_cast<std::size_t>(b_.rows()));
  values_.resize(static_cast<std::size_t>(b_.rows()));
  for (Eigen::Index i = 0; i < b_.rows(); ++i) {
    for (Eigen::Index j = 0; j < b_.cols(); ++j) {
      if (b_(i, j) != 0.0) {
        supports_[static_cast<std::size_t>(i)].push_back(static_cast<int>(j));
        values_[static_cast<std::size_t>(i)].push_back(b_(i, j));
      }
    }
  }
  if (empty == EmptyPartitions::kForbidden) {
    for (Eigen::Index j = 0; j < b_.cols(); ++j) {
      STRAGGLERSIM_ASSERT((b_.col(j).array() != 0.0).any(), "a partition is held by no worker");
    }
  }
}

GradientCode::GradientCode(int partitions, std::vector<std::vector<int>> supports)
    : workers_(static_cast<int>(supports.size())),
      partitions_(partitions),
      supports_(std::move(supports)) {
  STRAGGLERSIM_ASSERT(workers_ > 0 && partitions_ > 0, "empty assignment matrix");
  std::vector<char> held(static_cast<std::size_t>(partitions_), 0);
  values_.resize(supports_.size());
  for (std::size_t i = 0; i < supports_.size(); ++i) {
    values_[i].assign(supports_[i].size(), 1.0);
    for (const int j : supports_[i]) {
      STRAGGLERSIM_ASSERT(j >= 0 && j < partitions_, "support outside the partitions");
      held[static_cast<std::size_t>(j)] = 1;
    }
  }
  STRAGGLERSIM_ASSERT(std::find(held.begin(), held.end(), 0) == held.end(),
                      "a partition is held by no worker");
  if (static_cast<std::int64_t>(workers_) * partitions_ <= kDenseLimit) {
    b_ = Eigen::MatrixXd::Zero(workers_, partitions_);
    for (std::size_t i = 0; i < supports_.size(); ++i) {
      for (const int j : supports_[i]) {
        b_(static_cast<Eigen::Index>(i), j) = 1.0;
      }
    }
  }
}

GradientCode::GradientCode(const Compact& compact)
    : workers_(compact.workers),
      partitions_(compact.partitions),
      compact_support_(compact.support_size) {
  STRAGGLERSIM_ASSERT(workers_ > 0 && partitions_ > 0 && compact_support_ > 0,
                      "a compact code needs workers, partitions and a support size");
}

std::optional<double> GradientCode::uniform_load() const {
  if (!compact()) {
    return std::nullopt;
  }
  return static_cast<double>(compact_support_) * workers_ / partitions_;
}

const Eigen::MatrixXd& GradientCode::assignment() const {
  STRAGGLERSIM_ASSERT(b_.rows() == workers_, "dense B of a code this large is not materialised");
  return b_;
}

std::span<const double> GradientCode::support_values(int worker) const {
  STRAGGLERSIM_ASSERT(worker >= 0 && worker < workers(), "worker out of range");
  STRAGGLERSIM_ASSERT(!compact(), "a compact code keeps no supports");
  return values_[static_cast<std::size_t>(worker)];
}

std::span<const int> GradientCode::support(int worker) const {
  STRAGGLERSIM_ASSERT(worker >= 0 && worker < workers(), "worker out of range");
  STRAGGLERSIM_ASSERT(!compact(), "a compact code keeps no supports");
  return supports_[static_cast<std::size_t>(worker)];
}

double GradientCode::load(int worker) const {
  if (const auto u = uniform_load()) {
    STRAGGLERSIM_ASSERT(worker >= 0 && worker < workers(), "worker out of range");
    return *u;
  }
  return static_cast<double>(support(worker).size()) * workers() / partitions();
}

std::vector<double> GradientCode::loads() const {
  std::vector<double> out(static_cast<std::size_t>(workers()));
  for (int i = 0; i < workers(); ++i) {
    out[static_cast<std::size_t>(i)] = load(i);
  }
  return out;
}

Decoding GradientCode::finish(Eigen::VectorXd weights, double condition) const {
  STRAGGLERSIM_ASSERT(!compact(), "a compact code does not decode");
  Decoding d;
  // α = Bᵀa over the supports: O(nnz), and independent of whether B is materialised.
  d.alpha = Eigen::VectorXd::Zero(partitions_);
  for (Eigen::Index i = 0; i < weights.size(); ++i) {
    const double w = weights(i);
    if (w == 0.0) {
      continue;
    }
    const auto& sup = supports_[static_cast<std::size_t>(i)];
    const auto& val = values_[static_cast<std::size_t>(i)];
    for (std::size_t c = 0; c < sup.size(); ++c) {
      d.alpha(sup[c]) += w * val[c];
    }
  }
  d.weights = std::move(weights);
  d.error = (d.alpha.array() - 1.0).square().sum();
  d.condition = condition;
  d.partitions_covered = static_cast<int>((d.alpha.array() != 0.0).count());
  d.exact = d.error <= kExactTolerance && condition <= kConditionLimit;
  return d;
}

Decoding GradientCode::decode_optimal(std::span<const int> heard) const {
  return least_squares_decode(heard, false);
}

Decoding GradientCode::decode_outcome(std::span<const int> heard) const {
  return least_squares_decode(heard, true);
}

namespace {

/// σ_max/σ_min of the upper triangle `t` (full rank): its singular values.
double triangle_condition(const Eigen::MatrixXd& t) {
  const Eigen::BDCSVD<Eigen::MatrixXd> svd(t);
  const Eigen::VectorXd& sv = svd.singularValues();
  return sv(0) / sv(sv.size() - 1);
}

/// An upper bound of σ_max/σ_min of the upper triangle `t` (full rank): σ_max ≤ ‖t‖_F and
/// 1/σ_min = ‖t⁻¹‖₂ ≤ ‖t⁻¹‖_F (+∞ when the inverse overflows).
double triangle_condition_bound(const Eigen::MatrixXd& t) {
  const Eigen::MatrixXd inverse =
      t.triangularView<Eigen::Upper>().solve(Eigen::MatrixXd::Identity(t.rows(), t.cols()));
  const double bound = t.norm() * inverse.norm();
  return std::isfinite(bound) ? bound : std::numeric_limits<double>::infinity();
}

}  // namespace

Decoding GradientCode::least_squares_decode(std::span<const int> heard,
                                            bool bound_condition) const {
  Eigen::VectorXd weights = Eigen::VectorXd::Zero(workers());
  if (heard.empty()) {
    return finish(std::move(weights), 1.0);
  }
  // Solve min_a ‖B_Kᵀ a − 1‖ with a rank-revealing factorisation: B_Kᵀ is k × |K| and may be
  // rank deficient (more workers than needed), where the minimum-norm solution is wanted.
  Eigen::MatrixXd bkt(partitions(), static_cast<Eigen::Index>(heard.size()));
  for (std::size_t c = 0; c < heard.size(); ++c) {
    bkt.col(static_cast<Eigen::Index>(c)) = assignment().row(heard[c]).transpose();
  }
  Eigen::CompleteOrthogonalDecomposition<Eigen::MatrixXd> cod(bkt);
  const Eigen::VectorXd a = cod.solve(Eigen::VectorXd::Ones(partitions()));
  // Condition number of the solve: ratio of the extreme non-zero singular values of B_Kᵀ,
  // restricted to the numerical rank that the decomposition used. B_Kᵀ P = Q [T 0; 0 0] Z with
  // Q, Z orthogonal, so these are the singular values of the rank × rank triangle T: much cheaper
  // than an SVD of B_Kᵀ itself when k ≫ |K| or the rank is small.
  // A zero B_K (rank 0, e.g. BGC workers holding nothing) has the stable answer a = 0.
  const Eigen::Index rank = cod.rank();
  double condition = 1.0;
  if (rank > 0) {
    const Eigen::MatrixXd t =
        cod.matrixT().topLeftCorner(rank, rank).triangularView<Eigen::Upper>();
    // The bound decides exactness when it is within the limit; the value is needed otherwise.
    const double bound =
        bound_condition ? triangle_condition_bound(t) : std::numeric_limits<double>::infinity();
    condition = bound <= kConditionLimit ? bound : triangle_condition(t);
  }
  for (std::size_t c = 0; c < heard.size(); ++c) {
    weights(heard[c]) = a(static_cast<Eigen::Index>(c));
  }
  return finish(std::move(weights), condition);
}

Decoding GradientCode::decode_exact(std::span<const int> heard) const {
  Decoding d = decode_optimal(heard);
  if (d.condition > kConditionLimit) {
    d.exact = false;
    d.problem = fmt::format(
        "ill-conditioned decode: condition number {:.3g} exceeds {:.0e} for {} workers heard",
        d.condition,
        kConditionLimit,
        heard.size());
  } else if (d.error > kExactTolerance) {
    d.exact = false;
    d.problem =
        fmt::format("the {} workers heard cannot decode exactly; residual ‖α − 1‖² = {:.3g}",
                    heard.size(),
                    d.error);
  }
  return d;
}

std::optional<double> GradientCode::one_step_weight(int /*heard*/) const { return std::nullopt; }

Decoding GradientCode::decode_one_step(std::span<const int> heard) const {
  Eigen::VectorXd weights = Eigen::VectorXd::Zero(workers());
  std::vector<char> seen(static_cast<std::size_t>(workers()), 0);
  int r = 0;
  for (const int i : heard) {
    STRAGGLERSIM_ASSERT(i >= 0 && i < workers(), "worker out of range");
    char& c = seen[static_cast<std::size_t>(i)];
    r += c == 0 ? 1 : 0;
    c = 1;
  }
  const std::optional<double> a = one_step_weight(std::max(r, 1));
  if (!a) {
    return decode_optimal(heard);
  }
  if (r > 0) {
    for (int i = 0; i < workers(); ++i) {
      if (seen[static_cast<std::size_t>(i)] != 0) {
        weights(i) = *a;
      }
    }
  }
  return finish(std::move(weights), 1.0);
}

bool GradientCode::decodable(std::span<const int> heard) const { return decode_exact(heard).exact; }

void rescale(Decoding& decoding, Rescale rule, double erasure_probability) {
  double factor = 1.0;
  switch (rule) {
    case Rescale::kNone:
      return;
    case Rescale::kExpected:
      STRAGGLERSIM_ASSERT(erasure_probability < 1.0, "expected rescale needs q < 1");
      factor = 1.0 / (1.0 - erasure_probability);
      break;
    case Rescale::kEmpirical:
      if (decoding.partitions_covered == 0) {
        return;
      }
      factor = static_cast<double>(decoding.alpha.size()) / decoding.partitions_covered;
      break;
  }
  decoding.weights *= factor;
  decoding.alpha *= factor;
  decoding.error = (decoding.alpha.array() - 1.0).square().sum();
}

}  // namespace stragglersim::codes
