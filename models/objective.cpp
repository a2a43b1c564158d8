#include "models/objective.h"

#include <Eigen/Eigenvalues>
#include <algorithm>
#include <boost/random/mersenne_twister.hpp>
#include <boost/random/normal_distribution.hpp>
#include <boost/random/uniform_int_distribution.hpp>
#include <cmath>
#include <limits>
#include <stdexcept>
#include <string>
#include <utility>

#include "models/base/data_traffic.h"
#include "models/base/invariant.h"
#include "models/base/stop_request.h"
#include "models/row_kernels.h"

namespace stragglersim::models {

namespace {

// Fixed so that β, and every step size derived from it, is reproducible run to run.
constexpr std::uint64_t kPowerIterationSeed = 0x5eedbeefcafef00dULL;
// A dense eigendecomposition of a 5000 × 5000 Gram matrix already takes ~200 MB and seconds.
constexpr Eigen::Index kMaxEigenDimension = 5000;

// Row chunks of one Gram product: fixed by the data, never by the thread count, so the sum is
// the same bytes for every thread count. 64 keep the cores busy with little imbalance; wide
// data gets fewer, so that the chunks' p-vectors stay within 2²² doubles (32 MB).
constexpr Eigen::Index kGramChunks = 64;
constexpr Eigen::Index kGramChunkEntries = Eigen::Index{1} << 22;

// w = Aᵀ(A v)/m in one pass over the rows (the same fused pass as the gradient, with ℓ' = z),
// chunk by chunk into `partial` and summed in chunk order.
void apply_gram(const Dataset& data,
                const Eigen::VectorXd& v,
                Eigen::MatrixXd& partial,
                WorkerPool* pool,
                Eigen::VectorXd& w) {
  const int chunks = static_cast<int>(std::max<Eigen::Index>(
      1,
      std::min(
          {kGramChunks, data.rows(), kGramChunkEntries / std::max<Eigen::Index>(1, v.size())})));
  partial.setZero(v.size(), chunks);
  run_tasks(pool, chunks, [&](int c) {
    internal::fused_pass(data,
                         partition_rows(data.rows(), chunks, c),
                         v,
                         partial.col(c),
                         [](const auto& z, const auto& /*b*/, auto& loss, auto& slope) {
                           loss.setZero();
                           slope = z;
                         });
  });
  w = partial.col(0);
  for (int c = 1; c < chunks; ++c) {
    w += partial.col(c);
  }
  w /= static_cast<double>(data.rows());
}

// AᵀA/m (p × p) or AAᵀ/m (m × m), whichever is smaller: both have the same non-zero spectrum.
Eigen::MatrixXd small_gram(const Dataset& data) {
  count_data_bytes(data.stored_bytes());
  const auto scale = 1.0 / static_cast<double>(data.rows());
  const bool by_columns = data.dimension() <= data.rows();
  if (const auto* dense = std::get_if<DenseRows>(&data.features)) {
    if (by_columns) {
      Eigen::MatrixXd gram = Eigen::MatrixXd::Zero(dense->cols(), dense->cols());
      gram.selfadjointView<Eigen::Lower>().rankUpdate(dense->transpose(), scale);
      return gram;
    }
    Eigen::MatrixXd gram = Eigen::MatrixXd::Zero(dense->rows(), dense->rows());
    gram.selfadjointView<Eigen::Lower>().rankUpdate(*dense, scale);
    return gram;
  }
  const auto& sparse = std::get<SparseRows>(data.features);
  if (by_columns) {
    const SparseRows gram = sparse.transpose() * sparse;
    return Eigen::MatrixXd(gram) * scale;
  }
  const SparseRows gram = sparse * SparseRows(sparse.transpose());
  return Eigen::MatrixXd(gram) * scale;
}

}  // namespace

Objective::Objective(std::shared_ptr<const Dataset> data,
                     std::shared_ptr<const LossModel> loss,
                     double l2,
                     int partitions)
    : data_(std::move(data)), loss_(std::move(loss)), l2_(l2), partitions_(partitions) {
  STRAGGLERSIM_ASSERT(data_ != nullptr, "objective needs data");
  total_rows_ = data_->rows();
  STRAGGLERSIM_ASSERT(loss_ != nullptr, "objective needs a loss model");
  STRAGGLERSIM_ASSERT(l2_ >= 0.0, "l2 must be non-negative");
  STRAGGLERSIM_ASSERT(partitions_ >= 1 && partitions_ <= data_->rows(),
                      "partitions must be in [1, rows]");
  STRAGGLERSIM_ASSERT(data_->labels.size() == data_->rows(), "one label per row");
}

Objective Objective::held_partitions(std::shared_ptr<const Dataset> data,
                                     std::shared_ptr<const LossModel> loss,
                                     double l2,
                                     int partitions,
                                     Eigen::Index total_rows,
                                     HeldRows held) {
  STRAGGLERSIM_ASSERT(data != nullptr && total_rows >= partitions, "held partitions need data");
  for (const RowRange& r : held.ranges) {
    STRAGGLERSIM_ASSERT(r.begin >= 0 && r.end <= data->rows(), "a held range outside the data");
  }
  // Built as an objective over the held rows (its checks), then told the whole set's m.
  Objective out(std::move(data), std::move(loss), l2, 1);
  out.partitions_ = partitions;
  out.total_rows_ = total_rows;
  out.partial_ = true;
  out.held_ = std::move(held);
  return out;
}

RowRange Objective::partition(int j) const {
  if (!partial_) {
    return partition_rows(rows(), partitions_, j);
  }
  const auto it = std::lower_bound(held_.held.begin(), held_.held.end(), j);
  STRAGGLERSIM_ASSERT(it != held_.held.end() && *it == j, "partition not held by this objective");
  return held_.ranges[static_cast<std::size_t>(it - held_.held.begin())];
}

double Objective::evaluate(const Eigen::VectorXd& x,
                           Eigen::MatrixXd* partition_gradients,
                           WorkerPool* pool) const {
  STRAGGLERSIM_ASSERT(!partial_, "f needs the whole training set");
  STRAGGLERSIM_ASSERT(x.size() == dimension(), "x has the wrong dimension");
  const auto m = static_cast<double>(rows());
  double loss_sum = 0.0;
  if (partition_gradients == nullptr) {
    loss_sum = loss_->accumulate_value(*data_, RowRange{0, rows()}, x);
  } else {
    partition_gradients->setZero(dimension(), partitions_);
    // Partitions are contiguous row ranges: each thread streams its own share of the data.
    std::vector<double> losses(static_cast<std::size_t>(partitions_));
    run_tasks(pool, partitions_, [&](int j) {
      losses[static_cast<std::size_t>(j)] =
          loss_->accumulate(*data_, partition(j), x, partition_gradients->col(j));
      partition_gradients->col(j) /= m;
    });
    for (const double partition_loss : losses) {
      loss_sum += partition_loss;
    }
  }
  return loss_sum / m + 0.5 * l2_ * x.squaredNorm();
}

void Objective::partition_gradients(const std::vector<int>& which,
                                    const Eigen::VectorXd& x,
                                    Eigen::MatrixXd& out,
                                    WorkerPool* pool) const {
  out.resize(dimension(), static_cast<Eigen::Index>(which.size()));
  run_tasks(pool, static_cast<int>(which.size()), [&](int s) {
    partition_gradient(which[static_cast<std::size_t>(s)], x, out.col(s));
  });
}

double Objective::value(const Eigen::VectorXd& x) const { return evaluate(x, nullptr); }

Eigen::VectorXd Objective::gradient(const Eigen::VectorXd& x) const {
  STRAGGLERSIM_ASSERT(!partial_, "the gradient needs the whole training set");
  STRAGGLERSIM_ASSERT(x.size() == dimension(), "x has the wrong dimension");
  Eigen::VectorXd g = Eigen::VectorXd::Zero(dimension());
  loss_->accumulate(*data_, RowRange{0, rows()}, x, g);
  g /= static_cast<double>(rows());
  g += l2_ * x;
  return g;
}

void Objective::partition_gradient(int j,
                                   const Eigen::VectorXd& x,
                                   Eigen::Ref<Eigen::VectorXd> out) const {
  STRAGGLERSIM_ASSERT(j >= 0 && j < partitions_, "partition index out of range");
  STRAGGLERSIM_ASSERT(out.size() == dimension(), "out has the wrong dimension");
  out.setZero();
  loss_->accumulate(*data_, partition(j), x, out);
  out /= static_cast<double>(rows());
}

void Objective::partition_minibatch_gradient(int j,
                                             const Eigen::VectorXd& x,
                                             Eigen::Index batch,
                                             std::uint64_t seed,
                                             Eigen::Ref<Eigen::VectorXd> out) const {
  STRAGGLERSIM_ASSERT(j >= 0 && j < partitions_, "partition index out of range");
  STRAGGLERSIM_ASSERT(out.size() == dimension(), "out has the wrong dimension");
  const RowRange rows_j = partition(j);
  const Eigen::Index size = rows_j.end - rows_j.begin;
  STRAGGLERSIM_ASSERT(batch >= 1 && batch <= size, "minibatch outside 1 ... partition rows");
  out.setZero();
  // Selection sampling (Knuth's algorithm S): row r is kept with probability
  // (still needed)/(rows left), which leaves every b-subset equally likely and visits the rows
  // in ascending order; consecutive kept rows are accumulated as one range.
  RandomEngine rng(seed);
  Eigen::Index needed = batch;
  Eigen::Index run_begin = -1;
  for (Eigen::Index r = rows_j.begin; r < rows_j.end && needed > 0; ++r) {
    boost::random::uniform_int_distribution<Eigen::Index> pick(0, rows_j.end - r - 1);
    const bool keep = pick(rng) < needed;
    if (keep) {
      needed -= 1;
      if (run_begin < 0) {
        run_begin = r;
      }
    }
    if (run_begin >= 0 && (!keep || needed == 0)) {
      loss_->accumulate(*data_, RowRange{run_begin, keep ? r + 1 : r}, x, out);
      run_begin = -1;
    }
  }
  out *= static_cast<double>(size) / (static_cast<double>(batch) * static_cast<double>(rows()));
}

Eigen::Index Objective::smallest_partition_rows() const {
  Eigen::Index smallest = std::numeric_limits<Eigen::Index>::max();
  for (int j = 0; j < partitions_; ++j) {
    const RowRange r = partition_rows(total_rows_, partitions_, j);
    smallest = std::min(smallest, r.end - r.begin);
  }
  return smallest;
}

double Objective::smoothness(WorkerPool* pool) const {
  STRAGGLERSIM_ASSERT(!partial_, "beta needs the whole training set");
  if (!loss_->traits().convex) {
    return std::numeric_limits<double>::quiet_NaN();  // no global smoothness bound
  }
  return loss_->curvature_bound() * largest_gram_eigenvalue(*data_, 1000, 1e-10, pool) + l2_;
}

std::optional<double> Objective::pl_constant() const {
  STRAGGLERSIM_ASSERT(!partial_, "mu needs the whole training set");
  if (!loss_->traits().convex) {
    return std::nullopt;  // the mlp: no PL inequality holds globally
  }
  if (!loss_->traits().quadratic) {
    // Logistic loss on separable data has no minimiser, so only the regulariser gives PL.
    return l2_ > 0.0 ? std::optional<double>(l2_) : std::nullopt;
  }
  const Eigen::Index m = rows();
  const Eigen::Index p = dimension();
  if (std::min(m, p) > kMaxEigenDimension) {
    throw std::invalid_argument("pl_constant: the Gram matrix would be " +
                                std::to_string(std::min(m, p)) + " x " +
                                std::to_string(std::min(m, p)) +
                                "; dense eigendecomposition is limited to min(rows, features) <= " +
                                std::to_string(kMaxEigenDimension));
  }
  if (p == 0) {
    return l2_ > 0.0 ? std::optional<double>(l2_) : std::nullopt;
  }
  const Eigen::SelfAdjointEigenSolver<Eigen::MatrixXd> solver(small_gram(*data_),
                                                              Eigen::EigenvaluesOnly);
  STRAGGLERSIM_ASSERT(solver.info() == Eigen::Success, "Gram eigendecomposition failed");
  const Eigen::VectorXd& eigenvalues = solver.eigenvalues();  // ascending
  const double largest = eigenvalues[eigenvalues.size() - 1];
  // Eigenvalues of a rank-deficient Gram matrix come out as ±ε·λ_max, not exactly zero.
  const double threshold = 1e-10 * largest;
  for (const double eigenvalue : eigenvalues) {
    if (eigenvalue > threshold) {
      return eigenvalue + l2_;
    }
  }
  // A = 0: f is constant plus the regulariser.
  return l2_ > 0.0 ? std::optional<double>(l2_) : std::nullopt;
}

double largest_gram_eigenvalue(const Dataset& data,
                               int max_iterations,
                               double tolerance,
                               WorkerPool* pool) {
  STRAGGLERSIM_ASSERT(data.rows() >= 1, "largest_gram_eigenvalue needs at least one row");
  STRAGGLERSIM_ASSERT(max_iterations >= 1, "max_iterations must be at least 1");
  STRAGGLERSIM_ASSERT(tolerance > 0.0, "tolerance must be positive");
  const Eigen::Index p = data.dimension();
  if (p == 0) {
    return 0.0;
  }
  boost::random::mt19937_64 engine(kPowerIterationSeed);
  boost::random::normal_distribution<double> normal(0.0, 1.0);
  Eigen::VectorXd v(p);
  for (Eigen::Index i = 0; i < p; ++i) {
    v[i] = normal(engine);
  }
  v.normalize();
  Eigen::VectorXd w(p);
  Eigen::MatrixXd partial;
  double estimate = 0.0;
  for (int iteration = 0; iteration < max_iterations; ++iteration) {
    throw_if_stop_requested();
    apply_gram(data, v, partial, pool, w);
    // Rayleigh quotient vᵀGv with ‖v‖ = 1: converges twice as fast as ‖Gv‖ and never overshoots.
    const double next = v.dot(w);
    const double norm = w.norm();
    if (norm == 0.0) {
      return 0.0;  // v is in the null space of A: with a Gaussian start, A = 0.
    }
    v = w / norm;
    if (iteration > 0 && std::abs(next - estimate) <= tolerance * next) {
      return next;
    }
    estimate = next;
  }
  return estimate;
}

}  // namespace stragglersim::models
