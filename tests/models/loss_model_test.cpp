#include "models/loss_model.h"

#include <catch2/catch.hpp>
#include <cmath>
#include <cstring>
#include <limits>
#include <memory>

#include "models/dataset.h"

namespace {

using stragglersim::models::Dataset;
using stragglersim::models::DenseRows;
using stragglersim::models::make_least_squares_loss;
using stragglersim::models::make_logistic_loss;
using stragglersim::models::RowRange;
using stragglersim::models::SparseRows;

// Independent reference: the textbook formula (absolute error about ε for moderate margins).
double naive_logistic(double z, double b) { return std::log(1.0 + std::exp(-b * z)); }

// Central difference of a scalar function; error h²·|ℓ'''|/6 + ε·|ℓ|/h.
template <class F>
double central_difference(F f, double z, double h) {
  return (f(z + h) - f(z - h)) / (2.0 * h);
}

Dataset small_dataset() {
  DenseRows a(5, 3);
  a << 1.0, 0.0, 2.0,  //
      0.0, -1.0, 0.5,  //
      3.0, 1.0, 0.0,   //
      -2.0, 0.0, 1.0,  //
      0.5, 0.5, 0.5;
  Eigen::VectorXd b(5);
  b << 1.0, -1.0, 1.0, -1.0, 1.0;
  return Dataset{a, b};
}

}  // namespace

TEST_CASE("models: logistic loss matches log(1 + exp(-b z)) at moderate margins",
          "[models][logistic]") {
  const auto loss = make_logistic_loss();
  CHECK(loss->name() == "logistic");
  CHECK(loss->value(0.0, 1.0) == Approx(std::log(2.0)).epsilon(1e-15));
  for (const double z : {-20.0, -3.0, -0.5, 0.25, 2.0, 17.0}) {
    for (const double b : {-1.0, 1.0}) {
      // The naive log(1 + e) carries an absolute error of about ε, hence the margin.
      CHECK(loss->value(z, b) == Approx(naive_logistic(z, b)).epsilon(1e-13).margin(1e-15));
      // ℓ' = −b·σ(−b z) = −b / (1 + exp(b z)).
      CHECK(loss->derivative(z, b) == Approx(-b / (1.0 + std::exp(b * z))).epsilon(1e-13));
    }
  }
}

TEST_CASE("models: logistic loss neither overflows nor underflows at extreme margins",
          "[models][logistic]") {
  const auto loss = make_logistic_loss();
  // Large wrong-side margin: ℓ ≈ −t exactly, ℓ' = −b.
  CHECK(loss->value(-1000.0, 1.0) == Approx(1000.0).epsilon(1e-15));
  CHECK(loss->value(1000.0, -1.0) == Approx(1000.0).epsilon(1e-15));
  CHECK(loss->derivative(-1000.0, 1.0) == -1.0);
  CHECK(loss->derivative(1000.0, -1.0) == 1.0);
  // Large right-side margin: ℓ = log1p(e^{−t}) ≈ e^{−t}, which log(1 + e^{−t}) rounds to 0.
  CHECK(loss->value(40.0, 1.0) == Approx(std::exp(-40.0)).epsilon(1e-12));
  CHECK(loss->derivative(40.0, 1.0) == Approx(-std::exp(-40.0)).epsilon(1e-12));
  CHECK(loss->value(1e6, 1.0) == 0.0);
  CHECK(std::isfinite(loss->value(-1e300, 1.0)));
}

TEST_CASE("models: scalar derivatives agree with central differences", "[models][logistic]") {
  const double h = 1e-5;
  // Truncation h²·max|ℓ'''|/6 with |ℓ'''| ≤ 1, roundoff ε·max|ℓ|/h, both with a factor 10.
  const auto tolerance = [h](double scale) {
    return 10.0 * (h * h / 6.0 + std::numeric_limits<double>::epsilon() * scale / h);
  };
  for (const auto& loss : {make_logistic_loss(), make_least_squares_loss()}) {
    for (const double z : {-4.0, -0.3, 0.0, 0.7, 5.0}) {
      for (const double b : {-1.0, 1.0}) {
        const double fd = central_difference([&](double t) { return loss->value(t, b); }, z, h);
        INFO(loss->name() << " z = " << z << " b = " << b);
        CHECK(std::abs(fd - loss->derivative(z, b)) <=
              tolerance(std::max(1.0, std::abs(loss->value(z, b)))));
      }
    }
  }
}

TEST_CASE("models: least squares loss and curvature bounds", "[models][least_squares]") {
  const auto ls = make_least_squares_loss();
  CHECK(ls->name() == "least_squares");
  CHECK(ls->value(3.0, 1.0) == 2.0);
  CHECK(ls->derivative(3.0, 1.0) == 2.0);
  CHECK(ls->curvature_bound() == 1.0);
  const auto logistic = make_logistic_loss();
  CHECK(logistic->curvature_bound() == 0.25);
  // The bound is attained at z = 0: ℓ'' = σ(1 − σ) = 1/4 there.
  const double h = 1e-4;
  const double second = (logistic->derivative(h, 1.0) - logistic->derivative(-h, 1.0)) / (2 * h);
  CHECK(second == Approx(0.25).epsilon(1e-7));
}

TEST_CASE("models: accumulate sums losses and adds slope-weighted rows", "[models][loss]") {
  const Dataset data = small_dataset();
  const auto& a = std::get<DenseRows>(data.features);
  Eigen::VectorXd x(3);
  x << 0.3, -0.2, 0.1;
  for (const auto& loss : {make_logistic_loss(), make_least_squares_loss()}) {
    INFO(loss->name());
    // Every sub-range, so the tails shorter than a row block are covered too.
    for (Eigen::Index begin = 0; begin <= 5; ++begin) {
      for (Eigen::Index end = begin; end <= 5; ++end) {
        double expected_value = 0.0;
        Eigen::VectorXd expected_gradient = Eigen::VectorXd::Constant(3, 1.0);
        for (Eigen::Index i = begin; i < end; ++i) {
          const double z = a.row(i).dot(x);
          expected_value += loss->value(z, data.labels[i]);
          expected_gradient += loss->derivative(z, data.labels[i]) * a.row(i).transpose();
        }
        // accumulate adds to what is there.
        Eigen::VectorXd gradient = Eigen::VectorXd::Constant(3, 1.0);
        const double value = loss->accumulate(data, RowRange{begin, end}, x, gradient);
        CHECK(value == Approx(expected_value).epsilon(1e-14).margin(1e-15));
        CHECK((gradient - expected_gradient).norm() <= 1e-14 * (1.0 + expected_gradient.norm()));
        CHECK(loss->accumulate_value(data, RowRange{begin, end}, x) ==
              Approx(expected_value).epsilon(1e-14).margin(1e-15));

        Dataset sparse{SparseRows(a.sparseView()), data.labels};
        Eigen::VectorXd sparse_gradient = Eigen::VectorXd::Constant(3, 1.0);
        CHECK(loss->accumulate(sparse, RowRange{begin, end}, x, sparse_gradient) ==
              Approx(expected_value).epsilon(1e-14).margin(1e-15));
        CHECK((sparse_gradient - expected_gradient).norm() <=
              1e-14 * (1.0 + expected_gradient.norm()));
      }
    }
  }
}

TEST_CASE("models: accumulate_many adds accumulate's bytes to every column", "[models][loss]") {
  // 70 rows of 13 features (a third zero), ranges starting on and off the dense block of four
  // and the sparse block of 32 and ending everywhere. Rows 0 … 9 have label 0 and the zero
  // column x₀ gives them margin 0: least squares weights of exactly zero, which the sparse pass
  // skips, so the sums start at −0 there to see that it still does.
  const Eigen::Index m = 70;
  const Eigen::Index p = 13;
  DenseRows a(m, p);
  Eigen::VectorXd b(m);
  for (Eigen::Index i = 0; i < m; ++i) {
    for (Eigen::Index k = 0; k < p; ++k) {
      a(i, k) = (i + k) % 3 == 0 ? 0.0 : std::sin(static_cast<double>(1 + i * p + k));
    }
    b[i] = i < 10 ? 0.0 : (std::cos(static_cast<double>(i)) >= 0.0 ? 1.0 : -1.0);
  }
  const Dataset dense{a, b};
  const Dataset sparse{SparseRows(a.sparseView()), b};
  for (const Eigen::Index columns : {1, 3, 5}) {
    Eigen::MatrixXd x(p, columns);
    for (Eigen::Index s = 0; s < columns; ++s) {
      for (Eigen::Index k = 0; k < p; ++k) {
        x(k, s) = s == 0 ? 0.0 : 0.3 * std::cos(static_cast<double>(7 * s + k));
      }
    }
    const Eigen::MatrixXd start = Eigen::MatrixXd::Constant(p, columns, -0.0);
    for (const auto& loss : {make_logistic_loss(), make_least_squares_loss()}) {
      for (const Dataset* data : {&dense, &sparse}) {
        bool all_same = true;
        for (const Eigen::Index begin : {0, 1, 3, 4, 31, 32, 33}) {
          for (Eigen::Index end = begin; end <= m; ++end) {
            Eigen::MatrixXd sums = start;
            Eigen::VectorXd losses(columns);
            loss->accumulate_many(*data, RowRange{begin, end}, x, sums, losses);
            for (Eigen::Index s = 0; s < columns; ++s) {
              Eigen::VectorXd sum = start.col(s);
              const double value = loss->accumulate(*data, RowRange{begin, end}, x.col(s), sum);
              all_same = all_same && std::memcmp(&value, &losses[s], sizeof value) == 0 &&
                         std::memcmp(sum.data(), sums.col(s).data(), sizeof(double) * p) == 0;
            }
          }
        }
        INFO(loss->name() << (data->is_sparse() ? ", sparse" : ", dense") << ", S = " << columns);
        CHECK(all_same);
      }
    }
  }
}

TEST_CASE("models: score_rows_many gives score_rows' margins and losses for every column",
          "[models][loss]") {
  // 75 rows of 11 features (a third zero); ranges on and off the dense block of four and the
  // sparse block of 32; S across the sparse slices of eight columns (1 … 17).
  const Eigen::Index m = 75;
  const Eigen::Index p = 11;
  DenseRows a(m, p);
  Eigen::VectorXd b(m);
  for (Eigen::Index i = 0; i < m; ++i) {
    for (Eigen::Index k = 0; k < p; ++k) {
      a(i, k) = (i + 2 * k) % 3 == 0 ? 0.0 : std::cos(static_cast<double>(3 + i * p + k));
    }
    b[i] = std::sin(static_cast<double>(i)) >= 0.0 ? 1.0 : -1.0;
  }
  const Dataset dense{a, b};
  const Dataset sparse{SparseRows(a.sparseView()), b};
  for (const Eigen::Index columns : {1, 2, 3, 5, 8, 9, 17}) {
    Eigen::MatrixXd x(p, columns);
    for (Eigen::Index s = 0; s < columns; ++s) {
      for (Eigen::Index k = 0; k < p; ++k) {
        x(k, s) = 0.4 * std::sin(static_cast<double>(5 * s + k + 1));
      }
    }
    for (const auto& loss : {make_logistic_loss(), make_least_squares_loss()}) {
      for (const Dataset* data : {&dense, &sparse}) {
        bool all_same = true;
        for (const Eigen::Index begin : {0, 1, 4, 31, 32, 33}) {
          for (const Eigen::Index end : {begin, begin + 1, begin + 4, begin + 33, m}) {
            if (end > m) {
              continue;
            }
            const RowRange rows{begin, end};
            Eigen::MatrixXd z(rows.size(), columns);
            Eigen::MatrixXd losses(rows.size(), columns);
            loss->score_rows_many(*data, rows, x, z, losses);
            for (Eigen::Index s = 0; s < columns; ++s) {
              Eigen::VectorXd one_z(rows.size());
              Eigen::VectorXd one_losses(rows.size());
              loss->score_rows(*data, rows, x.col(s), one_z, one_losses);
              // An empty range has no data to compare (and null data pointers memcmp rejects).
              const auto bytes = sizeof(double) * static_cast<std::size_t>(rows.size());
              all_same =
                  all_same && (bytes == 0 ||
                               (std::memcmp(one_z.data(), z.col(s).data(), bytes) == 0 &&
                                std::memcmp(one_losses.data(), losses.col(s).data(), bytes) == 0));
            }
          }
        }
        INFO(loss->name() << (data->is_sparse() ? ", sparse" : ", dense") << ", S = " << columns);
        CHECK(all_same);
      }
    }
  }
}

TEST_CASE("models: accumulate rejects a wrong dimension or row range", "[models][loss]") {
  const Dataset data = small_dataset();
  const auto loss = make_logistic_loss();
  Eigen::VectorXd gradient = Eigen::VectorXd::Zero(3);
  CHECK_THROWS_AS(loss->accumulate(data, RowRange{0, 5}, Eigen::VectorXd::Zero(2), gradient),
                  std::logic_error);
  CHECK_THROWS_AS(loss->accumulate(data, RowRange{2, 6}, Eigen::VectorXd::Zero(3), gradient),
                  std::logic_error);
}

TEST_CASE("models: metrics are accuracy for logistic and mean squared error for least squares",
          "[models][loss]") {
  const Dataset data = small_dataset();
  Eigen::VectorXd x(3);
  x << 1.0, 1.0, 0.0;
  // z = (1, −1, 4, −2, 1) against labels (1, −1, 1, −1, 1): all five right.
  const auto logistic = make_logistic_loss();
  CHECK(logistic->metric_name() == "accuracy");
  CHECK(logistic->metric(data, x) == 1.0);
  CHECK(logistic->metric(data, -x) == 0.0);
  x << 1.0, 0.0, 0.0;  // z = (1, 0, 3, −2, 0.5): row 1 (z = 0 predicts +1, label −1) is wrong.
  CHECK(logistic->metric(data, x) == Approx(0.8));
  const auto ls = make_least_squares_loss();
  CHECK(ls->metric_name() == "mse");
  // Residuals z − b = (0, 1, 2, −1, −0.5).
  CHECK(ls->metric(data, x) == Approx((0.0 + 1.0 + 4.0 + 1.0 + 0.25) / 5.0));
}
