#include "models/loss_model.h"

#include <cmath>
#include <functional>
#include <limits>
#include <variant>
#include <vector>

#include "models/base/invariant.h"
#include "models/row_kernels.h"
#include "models/worker_pool.h"

namespace stragglersim::models {

double LossModel::accumulate_value(const Dataset& data,
                                   RowRange rows,
                                   const Eigen::VectorXd& x) const {
  Eigen::VectorXd scratch = Eigen::VectorXd::Zero(x.size());
  return accumulate(data, rows, x, scratch);
}

void LossModel::accumulate_many(const Dataset& data,
                                RowRange rows,
                                const Eigen::MatrixXd& x,
                                Eigen::Ref<Eigen::MatrixXd> gradient_sums,
                                Eigen::Ref<Eigen::VectorXd> losses) const {
  STRAGGLERSIM_ASSERT(gradient_sums.rows() == x.rows() && gradient_sums.cols() == x.cols() &&
                          losses.size() == x.cols(),
                      "one gradient sum and one loss per column of x");
  Eigen::VectorXd column;
  for (Eigen::Index s = 0; s < x.cols(); ++s) {
    column = x.col(s);
    losses[s] = accumulate(data, rows, column, gradient_sums.col(s));
  }
}

void LossModel::accumulate_ranges_many(const Dataset& data,
                                       const std::vector<RowRange>& ranges,
                                       const Eigen::MatrixXd& x,
                                       double divisor,
                                       const std::vector<Eigen::MatrixXd*>& gradients,
                                       Eigen::Ref<Eigen::MatrixXd> losses,
                                       WorkerPool* pool) const {
  const Eigen::Index p = x.rows();
  const Eigen::Index columns = x.cols();
  run_tasks(pool, static_cast<int>(ranges.size()), [&](int j) {
    Eigen::MatrixXd sums = Eigen::MatrixXd::Zero(p, columns);
    Eigen::VectorXd range_losses(columns);
    accumulate_many(data, ranges[static_cast<std::size_t>(j)], x, sums, range_losses);
    losses.row(j) = range_losses.transpose();
    for (Eigen::Index s = 0; s < columns; ++s) {
      auto out = gradients[static_cast<std::size_t>(s)]->col(j);
      out = sums.col(s);
      out /= divisor;
    }
  });
}

void LossModel::score_rows_many(const Dataset& data,
                                RowRange rows,
                                const Eigen::MatrixXd& x,
                                Eigen::Ref<Eigen::MatrixXd> z,
                                Eigen::Ref<Eigen::MatrixXd> losses) const {
  Eigen::VectorXd column_z(rows.size());
  Eigen::VectorXd column_losses(rows.size());
  for (Eigen::Index s = 0; s < x.cols(); ++s) {
    const Eigen::VectorXd column = x.col(s);
    score_rows(data, rows, column, column_z, column_losses);
    z.col(s) = column_z;
    losses.col(s) = column_losses;
  }
}

namespace {

void check_arguments(const Dataset& data, RowRange rows, const Eigen::VectorXd& x) {
  STRAGGLERSIM_ASSERT(x.size() == data.dimension(), "x has the wrong dimension");
  STRAGGLERSIM_ASSERT(data.labels.size() == data.rows(), "one label per row");
  STRAGGLERSIM_ASSERT(rows.begin >= 0 && rows.begin <= rows.end && rows.end <= data.rows(),
                      "row range outside the data");
}

void check_ranges(const Dataset& data,
                  const std::vector<RowRange>& ranges,
                  const Eigen::MatrixXd& x,
                  const std::vector<Eigen::MatrixXd*>& gradients,
                  const Eigen::Ref<Eigen::MatrixXd>& losses) {
  STRAGGLERSIM_ASSERT(x.rows() == data.dimension(), "x has the wrong dimension");
  STRAGGLERSIM_ASSERT(data.labels.size() == data.rows(), "one label per row");
  const auto count = static_cast<Eigen::Index>(ranges.size());
  STRAGGLERSIM_ASSERT(static_cast<Eigen::Index>(gradients.size()) == x.cols() &&
                          losses.rows() == count && losses.cols() == x.cols(),
                      "one gradient matrix per column of x and one loss per range and column");
  for (const Eigen::MatrixXd* g : gradients) {
    STRAGGLERSIM_ASSERT(g != nullptr && g->rows() == x.rows() && g->cols() == count,
                        "each gradient matrix is p × ranges");
  }
  for (const RowRange& rows : ranges) {
    STRAGGLERSIM_ASSERT(rows.begin >= 0 && rows.begin <= rows.end && rows.end <= data.rows(),
                        "row range outside the data");
  }
}

// CRTP base: Derived supplies static `loss(z, b, slope)` (returns ℓ, sets ℓ'), `curvature`,
// `metric_term(z, b)` and the names, so the per-row work is inlined into the fused pass and the
// only virtual call is the one per partition.
template <class Derived>
class RowwiseLoss : public LossModel {
  // Only Derived constructs its base (a RowwiseLoss<A> under a class B would call A's loss).
  RowwiseLoss() = default;
  friend Derived;

 public:
  [[nodiscard]] std::string_view name() const final { return Derived::kName; }
  [[nodiscard]] LossTraits traits() const final { return Derived::kTraits; }
  [[nodiscard]] double value(double z, double b) const final {
    double slope = 0.0;
    return Derived::loss(z, b, slope);
  }
  [[nodiscard]] double derivative(double z, double b) const final {
    double slope = 0.0;
    Derived::loss(z, b, slope);
    return slope;
  }
  [[nodiscard]] double second_derivative(double z, double b) const final {
    return Derived::curvature(z, b);
  }
  [[nodiscard]] double curvature_bound() const final { return Derived::kCurvature; }

  // NOLINTNEXTLINE(modernize-use-nodiscard): also called for its gradient alone
  double accumulate(const Dataset& data,
                    RowRange rows,
                    const Eigen::VectorXd& x,
                    Eigen::Ref<Eigen::VectorXd> gradient_sum) const final {
    check_arguments(data, rows, x);
    STRAGGLERSIM_ASSERT(gradient_sum.size() == x.size(), "gradient_sum has the wrong dimension");
    return internal::fused_pass(data, rows, x, gradient_sum, block_kernel());
  }

  void accumulate_many(const Dataset& data,
                       RowRange rows,
                       const Eigen::MatrixXd& x,
                       Eigen::Ref<Eigen::MatrixXd> gradient_sums,
                       Eigen::Ref<Eigen::VectorXd> losses) const final {
    STRAGGLERSIM_ASSERT(x.rows() == data.dimension(), "x has the wrong dimension");
    STRAGGLERSIM_ASSERT(data.labels.size() == data.rows(), "one label per row");
    STRAGGLERSIM_ASSERT(rows.begin >= 0 && rows.begin <= rows.end && rows.end <= data.rows(),
                        "row range outside the data");
    STRAGGLERSIM_ASSERT(gradient_sums.rows() == x.rows() && gradient_sums.cols() == x.cols() &&
                            losses.size() == x.cols(),
                        "one gradient sum and one loss per column of x");
    internal::fused_pass_many(data, rows, x, gradient_sums, losses, block_kernel());
  }

  void accumulate_ranges_many(const Dataset& data,
                              const std::vector<RowRange>& ranges,
                              const Eigen::MatrixXd& x,
                              double divisor,
                              const std::vector<Eigen::MatrixXd*>& gradients,
                              Eigen::Ref<Eigen::MatrixXd> losses,
                              WorkerPool* pool) const final {
    check_ranges(data, ranges, x, gradients, losses);
    const auto* sparse = std::get_if<SparseRows>(&data.features);
    if (sparse == nullptr || x.cols() == 1) {
      LossModel::accumulate_ranges_many(data, ranges, x, divisor, gradients, losses, pool);
      return;
    }
    // Each range's rows are walked once per group of columns, as fused_pass_many walks them.
    for (const RowRange& rows : ranges) {
      count_data_bytes(internal::sparse_groups(x.cols()) * data.stored_bytes(rows));
    }
    internal::sparse_ranges_many(
        *sparse,
        data.labels,
        ranges,
        x,
        divisor,
        gradients,
        losses,
        block_kernel(),
        [pool](int count, const std::function<void(int)>& task) { run_tasks(pool, count, task); });
  }

  [[nodiscard]] double accumulate_value(const Dataset& data,
                                        RowRange rows,
                                        const Eigen::VectorXd& x) const final {
    check_arguments(data, rows, x);
    return internal::value_pass(data, rows, x, block_kernel());
  }

  /// Default block kernel: the scalar loss row by row (inlined; Derived may vectorise instead).
  template <class Block>
  static void block_loss(const Block& z, const Block& b, Block& loss, Block& slope) {
    for (Eigen::Index r = 0; r < z.size(); ++r) {
      loss[r] = Derived::loss(z[r], b[r], slope[r]);
    }
  }

  [[nodiscard]] std::string_view metric_name() const final { return Derived::kMetricName; }
  [[nodiscard]] double metric(const Dataset& data, const Eigen::VectorXd& x) const final {
    Eigen::VectorXd z(data.rows());
    Eigen::VectorXd losses(data.rows());
    score_rows(data, RowRange{0, data.rows()}, x, z, losses);
    return metric_of_margins(z, data.labels);
  }

  void score_rows(const Dataset& data,
                  RowRange rows,
                  const Eigen::VectorXd& x,
                  Eigen::Ref<Eigen::VectorXd> z,
                  Eigen::Ref<Eigen::VectorXd> losses) const final {
    check_arguments(data, rows, x);
    STRAGGLERSIM_ASSERT(z.size() == rows.size() && losses.size() == rows.size(),
                        "one margin and one loss per row");
    internal::margin_pass(data, rows, x, z, losses, block_kernel());
  }

  void score_rows_many(const Dataset& data,
                       RowRange rows,
                       const Eigen::MatrixXd& x,
                       Eigen::Ref<Eigen::MatrixXd> z,
                       Eigen::Ref<Eigen::MatrixXd> losses) const final {
    STRAGGLERSIM_ASSERT(x.rows() == data.dimension(), "x has the wrong dimension");
    STRAGGLERSIM_ASSERT(rows.begin >= 0 && rows.begin <= rows.end && rows.end <= data.rows(),
                        "row range outside the data");
    STRAGGLERSIM_ASSERT(z.rows() == rows.size() && losses.rows() == rows.size() &&
                            z.cols() == x.cols() && losses.cols() == x.cols(),
                        "one margin and one loss per row and column");
    internal::margin_pass_many(data, rows, x, z, losses, block_kernel());
  }

  [[nodiscard]] double metric_of_margins(const Eigen::VectorXd& z,
                                         const Eigen::VectorXd& labels) const final {
    STRAGGLERSIM_ASSERT(z.size() == labels.size(), "one label per margin");
    if (z.size() == 0) {
      return std::numeric_limits<double>::quiet_NaN();
    }
    double total = 0.0;
    for (Eigen::Index i = 0; i < z.size(); ++i) {
      total += Derived::metric_term(z[i], labels[i]);
    }
    return total / static_cast<double>(z.size());
  }

 private:
  static auto block_kernel() {
    return [](const auto& z, const auto& b, auto& loss, auto& slope) {
      Derived::block_loss(z, b, loss, slope);
    };
  }
};

class LeastSquaresLoss final : public RowwiseLoss<LeastSquaresLoss> {
 public:
  static constexpr std::string_view kName = "least_squares";
  static constexpr std::string_view kMetricName = "mse";
  static constexpr LossTraits kTraits{false, true};
  static constexpr double kCurvature = 1.0;

  static double loss(double z, double b, double& slope) {
    const double r = z - b;
    slope = r;
    return 0.5 * r * r;
  }
  template <class Block>
  static void block_loss(const Block& z, const Block& b, Block& loss, Block& slope) {
    slope = z - b;
    loss = 0.5 * slope.square();
  }
  static double curvature(double /*z*/, double /*b*/) { return 1.0; }
  static double metric_term(double z, double b) { return (z - b) * (z - b); }
};

class LogisticLoss final : public RowwiseLoss<LogisticLoss> {
 public:
  static constexpr std::string_view kName = "logistic";
  static constexpr std::string_view kMetricName = "accuracy";
  static constexpr LossTraits kTraits{true, false, true};
  static constexpr double kCurvature = 0.25;

  static double loss(double z, double b, double& slope) {
    // With t = b·z: ℓ = max(−t, 0) + log1p(e^{−|t|}) and σ(−t) from the same e^{−|t|}, so
    // neither the loss nor the slope overflows or cancels for any margin.
    const double t = b * z;
    const double e = std::exp(-std::abs(t));
    const double sigmoid_minus_t = t >= 0.0 ? e / (1.0 + e) : 1.0 / (1.0 + e);
    slope = -b * sigmoid_minus_t;
    return (t < 0.0 ? -t : 0.0) + std::log1p(e);
  }
  // The same formulas on a block, so Eigen vectorises exp and log. Eigen has no vectorised
  // double log1p, so log1p(e) = log(u) + (e − (u − 1))/u with u = fl(1 + e): the second term
  // restores what rounding 1 + e lost (for e < 2⁻⁵³ it is e itself), accurate to a few ulps.
  template <class Block>
  static void block_loss(const Block& z, const Block& b, Block& loss, Block& slope) {
    const Block t = b * z;
    const Block e = (-t.abs()).exp();
    const Block u = 1.0 + e;
    const Block inverse_u = u.inverse();
    slope = -b * (t >= 0.0).select(e, 1.0) * inverse_u;
    loss = (-t).max(0.0) + u.log() + (e - (u - 1.0)) * inverse_u;
  }
  // σ(t)(1 − σ(t)) with t = b·z (b² = 1), from e^{−|t|} so that it never overflows.
  static double curvature(double z, double b) {
    const double e = std::exp(-std::abs(b * z));
    return e / ((1.0 + e) * (1.0 + e));
  }
  // Predicts +1 at z = 0 so a zero model is not counted right by accident for both classes.
  static double metric_term(double z, double b) {
    const double predicted = z >= 0.0 ? 1.0 : -1.0;
    return predicted * b > 0.0 ? 1.0 : 0.0;
  }
};

}  // namespace

std::unique_ptr<LossModel> make_least_squares_loss() {
  return std::make_unique<LeastSquaresLoss>();
}

std::unique_ptr<LossModel> make_logistic_loss() { return std::make_unique<LogisticLoss>(); }

}  // namespace stragglersim::models
