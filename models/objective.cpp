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
#include <variant>
#include <vector>

#include "models/base/data_traffic.h"
#include "models/base/invariant.h"
#include "models/base/stop_request.h"
#include "models/row_kernels.h"

namespace stragglersim::models {

namespace {

// Fixed so that β, and every step size derived from it, is reproducible run to run.
constexpr std::uint64_t kPowerIterationSeed = 0x5eedbeefcafef00dULL;
// The Lanczos basis of λ_max: at most 64 vectors, and at most 64 MB of them.
constexpr Eigen::Index kLanczosBasis = 64;
constexpr Eigen::Index kLanczosBasisBytes = Eigen::Index{1} << 26;
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

/// The top Ritz value θ of a Lanczos basis and the residual ‖Gy − θy‖ of its Ritz vector y;
/// `restart` when the cycle ended on a full basis before the pair was final.
struct RitzPair {
  double value = 0.0;
  double residual = 0.0;
  bool restart = false;
};

/// Lanczos with full reorthogonalisation on G = AᵀA/m (largest_gram_eigenvalue): each step is one
/// Gram product, one pass over the data; the top Ritz value is a Rayleigh quotient, θ ≤ λ_max.
class LanczosCycle {
 public:
  /// `budget` Gram products in all; a basis of `columns` vectors.
  LanczosCycle(
      const Dataset& data, WorkerPool* pool, double tolerance, int budget, Eigen::Index columns)
      : data_(&data),
        pool_(pool),
        tolerance_(tolerance),
        budget_(budget),
        q_(data.dimension(), columns) {}

  [[nodiscard]] int products() const { return products_; }

  /// From the unit vector `v` until the top pair is final (it converged, residual ≤ tolerance·θ;
  /// the budget ran out; a value is not finite; or θ ≤ 0) or the basis is full: then `restart`
  /// is set and `v` is the top Ritz vector to restart from.
  RitzPair run(Eigen::VectorXd& v) {
    q_.col(0) = v;
    alpha_.clear();
    beta_.clear();
    RitzPair top;
    for (Eigen::Index j = 0; j < q_.cols(); ++j) {
      throw_if_stop_requested();
      column_ = q_.col(j);
      apply_gram(*data_, column_, partial_, pool_, w_);
      ++products_;
      alpha_.push_back(column_.dot(w_));
      // Classical Gram–Schmidt against the whole basis, twice ("twice is enough").
      for (int pass = 0; pass < 2; ++pass) {
        w_.noalias() -= q_.leftCols(j + 1) * (q_.leftCols(j + 1).transpose() * w_);
      }
      const double next_beta = w_.norm();
      ritz_.computeFromTridiagonal(
          Eigen::Map<const Eigen::VectorXd>(alpha_.data(), j + 1),
          Eigen::VectorXd(Eigen::Map<const Eigen::VectorXd>(beta_.data(), j)),
          Eigen::ComputeEigenvectors);
      top.value = ritz_.eigenvalues()(j);
      top.residual = next_beta * std::abs(ritz_.eigenvectors()(j, j));
      if (!std::isfinite(top.value) || !std::isfinite(top.residual) || top.value <= 0.0 ||
          top.residual <= tolerance_ * top.value || products_ >= budget_) {
        return top;
      }
      if (j + 1 == q_.cols() || next_beta == 0.0) {
        // A full basis (or an invariant subspace): restart from the top Ritz vector.
        v = q_.leftCols(j + 1) * ritz_.eigenvectors().col(j);
        v.normalize();
        top.restart = true;
        return top;
      }
      beta_.push_back(next_beta);
      q_.col(j + 1) = w_ / next_beta;
    }
    return top;
  }

 private:
  const Dataset* data_;
  WorkerPool* pool_;
  double tolerance_;
  int budget_;
  Eigen::MatrixXd q_;  ///< the basis
  int products_ = 0;
  Eigen::VectorXd w_;
  Eigen::VectorXd column_;
  Eigen::MatrixXd partial_;
  std::vector<double> alpha_;
  std::vector<double> beta_;
  Eigen::SelfAdjointEigenSolver<Eigen::MatrixXd> ritz_;
};

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

const std::vector<Eigen::Index>* Objective::partition_support(int j) const {
  const auto* sparse = std::get_if<SparseRows>(&data_->features);
  if (sparse == nullptr || !loss_->traits().scalar_margin || partial_) {
    return nullptr;
  }
  std::call_once(supports_->found, [&] {
    const internal::SparseArrays arrays = internal::sparse_arrays(*sparse);
    supports_->features.resize(static_cast<std::size_t>(partitions_));
    for (int i = 0; i < partitions_; ++i) {
      std::vector<Eigen::Index> features =
          internal::touched_features(arrays, partition(i), data_->dimension());
      if (std::cmp_less(features.size(), data_->dimension())) {
        supports_->features[static_cast<std::size_t>(i)] = std::move(features);
      }
    }
  });
  const std::vector<Eigen::Index>& features = supports_->features[static_cast<std::size_t>(j)];
  return features.empty() ? nullptr : &features;
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
    partition_gradients->resize(dimension(), partitions_);
    // Partitions are contiguous row ranges: each thread zeroes, streams and divides its own share
    // of the data and of the matrix. On wide sparse data ∇F_j is +0 (and +0 / m) but at the
    // features its rows touch: only those are divided.
    std::vector<double> losses(static_cast<std::size_t>(partitions_));
    run_tasks(pool, partitions_, [&](int j) {
      auto column = partition_gradients->col(j);
      column.setZero();
      losses[static_cast<std::size_t>(j)] = loss_->accumulate(*data_, partition(j), x, column);
      if (const std::vector<Eigen::Index>* support = partition_support(j)) {
        for (const Eigen::Index f : *support) {
          column(f) /= m;
        }
      } else {
        column /= m;
      }
    });
    for (const double partition_loss : losses) {
      loss_sum += partition_loss;
    }
  }
  return loss_sum / m + 0.5 * l2_ * x.squaredNorm();
}

std::vector<double> Objective::evaluate_many(
    const std::vector<const Eigen::VectorXd*>& xs,
    const std::vector<Eigen::MatrixXd*>& partition_gradients,
    WorkerPool* pool) const {
  STRAGGLERSIM_ASSERT(!xs.empty() && xs.size() == partition_gradients.size(),
                      "one gradient matrix per x");
  for (std::size_t s = 0; s < xs.size(); ++s) {
    STRAGGLERSIM_ASSERT(xs[s] != nullptr && partition_gradients[s] != nullptr,
                        "evaluate_many needs every x and gradient matrix");
  }
  if (xs.size() == 1) {
    return {evaluate(*xs[0], partition_gradients[0], pool)};
  }
  STRAGGLERSIM_ASSERT(!partial_, "f needs the whole training set");
  const auto columns = static_cast<Eigen::Index>(xs.size());
  const Eigen::Index p = dimension();
  Eigen::MatrixXd x(p, columns);
  for (Eigen::Index s = 0; s < columns; ++s) {
    const Eigen::VectorXd& column = *xs[static_cast<std::size_t>(s)];
    STRAGGLERSIM_ASSERT(column.size() == p, "x has the wrong dimension");
    x.col(s) = column;
    partition_gradients[static_cast<std::size_t>(s)]->resize(p, partitions_);
  }
  const auto m = static_cast<double>(rows());
  std::vector<RowRange> ranges;
  ranges.reserve(static_cast<std::size_t>(partitions_));
  for (int j = 0; j < partitions_; ++j) {
    ranges.push_back(partition(j));
  }
  // Column s of losses is x_s's loss per partition, summed below in partition order.
  Eigen::MatrixXd losses(partitions_, columns);
  loss_->accumulate_ranges_many(*data_, ranges, x, m, partition_gradients, losses, pool);
  std::vector<double> values(xs.size());
  for (Eigen::Index s = 0; s < columns; ++s) {
    double loss_sum = 0.0;
    for (int j = 0; j < partitions_; ++j) {
      loss_sum += losses(j, s);
    }
    values[static_cast<std::size_t>(s)] =
        loss_sum / m + 0.5 * l2_ * xs[static_cast<std::size_t>(s)]->squaredNorm();
  }
  return values;
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

void Objective::partition_gradients_many(const std::vector<PartitionTask>& tasks,
                                         WorkerPool* pool) const {
  // The tasks of each partition, in the order given (the order changes no byte: each column of
  // a pass is its own task's).
  std::vector<std::vector<const PartitionTask*>> by_partition(
      static_cast<std::size_t>(partitions_));
  for (const PartitionTask& task : tasks) {
    STRAGGLERSIM_ASSERT(task.partition >= 0 && task.partition < partitions_,
                        "partition index out of range");
    STRAGGLERSIM_ASSERT(task.x != nullptr && task.out != nullptr, "a task needs x and out");
    STRAGGLERSIM_ASSERT(task.x->size() == dimension(), "x has the wrong dimension");
    by_partition[static_cast<std::size_t>(task.partition)].push_back(&task);
  }
  std::vector<int> busy;
  for (int j = 0; j < partitions_; ++j) {
    if (!by_partition[static_cast<std::size_t>(j)].empty()) {
      busy.push_back(j);
    }
  }
  const Eigen::Index p = dimension();
  const auto m = static_cast<double>(rows());
  run_tasks(pool, static_cast<int>(busy.size()), [&](int b) {
    const int j = busy[static_cast<std::size_t>(b)];
    const auto& mine = by_partition[static_cast<std::size_t>(j)];
    const auto columns = static_cast<Eigen::Index>(mine.size());
    Eigen::MatrixXd x(p, columns);
    for (Eigen::Index s = 0; s < columns; ++s) {
      x.col(s) = *mine[static_cast<std::size_t>(s)]->x;
    }
    Eigen::MatrixXd sums = Eigen::MatrixXd::Zero(p, columns);
    Eigen::VectorXd losses(columns);
    loss_->accumulate_many(*data_, partition(j), x, sums, losses);
    for (Eigen::Index s = 0; s < columns; ++s) {
      Eigen::VectorXd& out = *mine[static_cast<std::size_t>(s)]->out;
      out = sums.col(s);
      out /= m;
    }
  });
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
  const Eigen::Index basis = std::clamp<Eigen::Index>(
      kLanczosBasisBytes / (static_cast<Eigen::Index>(sizeof(double)) * p), 2, kLanczosBasis);
  LanczosCycle lanczos(data, pool, tolerance, max_iterations, std::min(basis, p));
  RitzPair top;
  do {
    top = lanczos.run(v);
  } while (top.restart);
  if (!std::isfinite(top.value) || !std::isfinite(top.residual)) {
    return std::numeric_limits<double>::infinity();  // values too large to square: β says so
  }
  return std::max(top.value, 0.0);  // θ = 0: the start is in the null space (A = 0)
}

}  // namespace stragglersim::models
