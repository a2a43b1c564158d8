#include "models/synthetic_data.h"

#include <boost/random/bernoulli_distribution.hpp>
#include <boost/random/mersenne_twister.hpp>
#include <boost/random/normal_distribution.hpp>
#include <cmath>
#include <utility>

#include "models/base/invariant.h"
#include "models/base/stop_request.h"

namespace stragglersim::models {

Eigen::VectorXd feature_scales(Eigen::Index features, double condition) {
  STRAGGLERSIM_ASSERT(condition >= 1.0, "feature_scales: condition must be >= 1");
  Eigen::VectorXd scales = Eigen::VectorXd::Ones(features);
  if (condition == 1.0 || features < 2) {
    return scales;
  }
  const double last = static_cast<double>(features - 1);
  for (Eigen::Index k = 0; k < features; ++k) {
    scales[k] = std::pow(condition, -0.5 * static_cast<double>(k) / last);
  }
  return scales;
}

namespace {

/// The rows a generator stores: all, or those `keep` selects (in ascending order).
class KeptRows {
 public:
  KeptRows(Eigen::Index rows, Eigen::Index p, RowKeep* keep)
      : keep_(keep),
        a_(keep != nullptr ? static_cast<Eigen::Index>(keep->rows.size()) : rows, p),
        labels_(a_.rows()) {}

  void add(Eigen::Index i, const Eigen::VectorXd& row, double label, LabelValues* labels) {
    if (store(i, row)) {
      labels_[next_ - 1] = label;
    }
    if (labels != nullptr) {
      labels->add(label);
    }
  }

  /// Stores row i if kept (`scratch_` otherwise) and returns its dot product with `x` taken
  /// from a buffer at the row's full-load alignment, so the result does not depend on `keep`.
  double dot_after_store(Eigen::Index i, const Eigen::VectorXd& row, const Eigen::VectorXd& x) {
    pending_ = store(i, row);
    // The full load's dot product runs on row i of an aligned row-major matrix: reproduce the
    // alignment of that row (i·p doubles from an aligned start).
    const Eigen::Index p = row.size();
    const Eigen::Index offset = (i * p) % kRowAlignment;
    scratch_.resize(kRowAlignment + p);
    scratch_.segment(offset, p) = row;
    return Eigen::Map<const Eigen::VectorXd>(scratch_.data() + offset, p).dot(x);
  }
  void set_label(Eigen::Index /*i*/, double label, LabelValues* labels) {
    if (pending_) {
      labels_[next_ - 1] = label;
    }
    if (labels != nullptr) {
      labels->add(label);
    }
  }

  Dataset finish() { return Dataset{std::move(a_), std::move(labels_)}; }

 private:
  bool store(Eigen::Index i, const Eigen::VectorXd& row) {
    if (keep_ != nullptr && !keep_->keeps(i)) {
      return false;
    }
    a_.row(next_++) = row;
    return true;
  }

  RowKeep* keep_;
  DenseRows a_;
  Eigen::VectorXd labels_;
  Eigen::Index next_ = 0;
  bool pending_ = false;
  Eigen::VectorXd scratch_;
};

}  // namespace

// Draw order is part of the contract (same seed, same bytes), so it is fixed here:
// first the model vector (μ or x*), then row by row (label, then features, then noise).

Dataset make_gaussian_mixture(const GaussianMixtureOptions& options,
                              RowKeep* keep,
                              LabelValues* labels) {
  STRAGGLERSIM_ASSERT(options.rows >= 1, "gaussian_mixture: rows must be at least 1");
  STRAGGLERSIM_ASSERT(options.features >= 1, "gaussian_mixture: features must be at least 1");
  STRAGGLERSIM_ASSERT(options.separation >= 0.0, "gaussian_mixture: separation must be >= 0");
  const Eigen::VectorXd scales = feature_scales(options.features, options.condition);
  boost::random::mt19937_64 engine(options.seed);
  boost::random::normal_distribution<double> normal(0.0, 1.0);
  boost::random::bernoulli_distribution<double> coin(0.5);

  const Eigen::Index p = options.features;
  Eigen::VectorXd mu(p);
  for (Eigen::Index k = 0; k < p; ++k) {
    mu[k] = normal(engine);
  }
  mu *= options.separation / mu.norm();

  KeptRows out(options.rows, p, keep);
  Eigen::VectorXd row(p);
  for (Eigen::Index i = 0; i < options.rows; ++i) {
    poll_stop_request(i);
    const double b = coin(engine) ? 1.0 : -1.0;
    for (Eigen::Index k = 0; k < p; ++k) {
      row[k] = b * mu[k] + scales[k] * normal(engine);
    }
    out.add(i, row, b, labels);
  }
  return out.finish();
}

Dataset make_linear_regression(const LinearRegressionOptions& options,
                               RowKeep* keep,
                               LabelValues* labels) {
  STRAGGLERSIM_ASSERT(options.rows >= 1, "linear_regression: rows must be at least 1");
  STRAGGLERSIM_ASSERT(options.features >= 1, "linear_regression: features must be at least 1");
  STRAGGLERSIM_ASSERT(options.noise >= 0.0, "linear_regression: noise must be >= 0");
  const Eigen::VectorXd scales = feature_scales(options.features, options.condition);
  boost::random::mt19937_64 engine(options.seed);
  boost::random::normal_distribution<double> normal(0.0, 1.0);

  const Eigen::Index p = options.features;
  const double model_scale = 1.0 / std::sqrt(static_cast<double>(p));
  Eigen::VectorXd x_star(p);
  for (Eigen::Index k = 0; k < p; ++k) {
    x_star[k] = model_scale * normal(engine);
  }

  KeptRows out(options.rows, p, keep);
  Eigen::VectorXd row(p);
  for (Eigen::Index i = 0; i < options.rows; ++i) {
    poll_stop_request(i);
    for (Eigen::Index k = 0; k < p; ++k) {
      row[k] = scales[k] * normal(engine);
    }
    // The same dot product as on a stored row: a row of a row-major matrix and this vector are
    // both contiguous, and the alignment-dependent split of a vectorised dot is avoided by
    // summing from the stored copy.
    const double b = out.dot_after_store(i, row, x_star) + options.noise * normal(engine);
    out.set_label(i, b, labels);
  }
  return out.finish();
}

}  // namespace stragglersim::models
