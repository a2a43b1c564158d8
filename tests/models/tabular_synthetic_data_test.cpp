#include "models/tabular_synthetic_data.h"

#include <algorithm>
#include <catch2/catch.hpp>
#include <cmath>
#include <memory>
#include <numeric>

#include "models/loss_model.h"
#include "models/objective.h"

namespace stragglersim::models {
namespace {

const SparseRows& sparse(const Dataset& d) { return std::get<SparseRows>(d.features); }

bool same_bytes(const Dataset& a, const Dataset& b) {
  const SparseRows& x = sparse(a);
  const SparseRows& y = sparse(b);
  return x.rows() == y.rows() && x.cols() == y.cols() && x.nonZeros() == y.nonZeros() &&
         std::equal(x.outerIndexPtr(), x.outerIndexPtr() + x.rows() + 1, y.outerIndexPtr()) &&
         std::equal(x.innerIndexPtr(), x.innerIndexPtr() + x.nonZeros(), y.innerIndexPtr()) &&
         std::equal(x.valuePtr(), x.valuePtr() + x.nonZeros(), y.valuePtr()) &&
         a.labels == b.labels;
}

// Every row has exactly `per_row` entries with strictly increasing columns in [0, p), one entry
// in each one-hot block (value 1) and one in each interaction block (value 1).
void check_structure(const Dataset& d, const TabularLayout& layout) {
  const SparseRows& a = sparse(d);
  REQUIRE(a.isCompressed());
  const Eigen::Index per_row = layout.non_zeros_per_row();
  std::vector<Eigen::Index> block_ends;
  Eigen::Index end = layout.numeric;
  for (const auto c : layout.cardinalities) block_ends.push_back(end += c);
  for (const auto b : layout.interaction_blocks) block_ends.push_back(end += b);
  REQUIRE(end == a.cols());
  // One assertion per data set (not per entry): the first row that breaks the structure.
  Eigen::Index bad_row = -1;
  for (Eigen::Index i = 0; i < a.rows() && bad_row < 0; ++i) {
    bool ok = a.outerIndexPtr()[i + 1] - a.outerIndexPtr()[i] == per_row;
    Eigen::Index k = 0;
    Eigen::Index previous = -1;
    for (SparseRows::InnerIterator it(a, i); it && ok; ++it, ++k) {
      ok = it.index() > previous;
      previous = it.index();
      if (k < layout.numeric) {
        ok = ok && it.index() == k;
      } else {
        const auto block = static_cast<std::size_t>(k - layout.numeric);
        const Eigen::Index begin = block == 0 ? layout.numeric : block_ends[block - 1];
        ok = ok && it.index() >= begin && it.index() < block_ends[block] && it.value() == 1.0;
      }
    }
    if (!ok) bad_row = i;
  }
  CHECK(bad_row == -1);
}

/// A sparse table of `rows` x `dimension` with the layout's structure; its memory is the
/// non-zeros (`per_row` a row), with nothing allocated beyond them.
void check_sparse_table(const Dataset& d,
                        Eigen::Index rows,
                        Eigen::Index dimension,
                        const TabularLayout& layout,
                        Eigen::Index per_row) {
  CHECK(d.rows() == rows);
  CHECK(d.dimension() == dimension);
  check_structure(d, layout);
  CHECK(d.stored_entries() == rows * per_row);
  CHECK(sparse(d).data().allocatedSize() == d.stored_entries());
}

double positive_fraction(const Dataset& d) {
  return (d.labels.array() > 0.0).cast<double>().mean();
}

}  // namespace

TEST_CASE("models: paper-shaped layouts have the paper's feature counts and non-zeros per row",
          "[models][tabular]") {
  const auto amazon = stragglersim::models::amazon_like_layout(241'915);
  CHECK(amazon.features() == 241'915);
  CHECK(amazon.non_zeros_per_row() == 45);  // 9 one-hot + 36 interactions
  CHECK(amazon.cardinalities ==
        std::vector<Eigen::Index>{7518, 4243, 128, 177, 449, 343, 2358, 67, 343});
  CHECK(amazon.interaction_blocks.size() == 36);
  const auto covtype = stragglersim::models::covtype_like_layout(15'509);
  CHECK(covtype.features() == 15'509);
  CHECK(covtype.non_zeros_per_row() == 88);  // 10 numeric + 12 one-hot + 66 interactions
  const auto kc = stragglersim::models::kc_housing_like_layout(27'654);
  CHECK(kc.features() == 27'654);
  CHECK(kc.non_zeros_per_row() == 28);  // 17 numeric + 11 one-hot
  CHECK(kc.interaction_blocks.empty());
  // Overridden sizes keep the exact feature count down to each generator's minimum.
  for (const Eigen::Index p : {100, 101, 257, 5000, 300'001}) {
    CHECK(stragglersim::models::amazon_like_layout(p).features() == p);
  }
  for (const Eigen::Index p : {200, 333, 15'510, 80'000}) {
    CHECK(stragglersim::models::covtype_like_layout(p).features() == p);
  }
  for (const Eigen::Index p : {64, 65, 99, 1000, 50'000}) {
    const auto layout = stragglersim::models::kc_housing_like_layout(p);
    CHECK(layout.features() == p);
    CHECK(*std::min_element(layout.cardinalities.begin(), layout.cardinalities.end()) >= 2);
  }
}

TEST_CASE("models: sparse generators are reproducible per seed and differ across seeds",
          "[models][tabular]") {
  const auto amazon = [](std::uint64_t seed) {
    return stragglersim::models::make_amazon_like({500, 2000, 0.942, seed});
  };
  CHECK(same_bytes(amazon(3), amazon(3)));
  CHECK_FALSE(same_bytes(amazon(3), amazon(4)));
  const auto covtype = [](std::uint64_t seed) {
    return stragglersim::models::make_covtype_like({500, 1000, 0.572, seed});
  };
  CHECK(same_bytes(covtype(3), covtype(3)));
  CHECK_FALSE(same_bytes(covtype(3), covtype(4)));
  const auto kc = [](std::uint64_t seed) {
    return stragglersim::models::make_kc_housing_like({500, 1000, 0.5, seed});
  };
  CHECK(same_bytes(kc(3), kc(3)));
  CHECK_FALSE(same_bytes(kc(3), kc(4)));
}

TEST_CASE("models: sparse generators store exactly the documented non-zeros per row",
          "[models][tabular]") {
  SECTION("amazon_like at the paper's size") {
    const Dataset d = stragglersim::models::make_amazon_like(AmazonLikeOptions{});
    check_sparse_table(d, 26'215, 241'915, stragglersim::models::amazon_like_layout(241'915), 45);
  }
  SECTION("covtype_like") {
    const Dataset d = stragglersim::models::make_covtype_like({3000, 15'509, 0.572, 5});
    check_sparse_table(d, 3000, 15'509, stragglersim::models::covtype_like_layout(15'509), 88);
  }
  SECTION("kc_housing_like at the paper's size") {
    const Dataset d = stragglersim::models::make_kc_housing_like(KcHousingLikeOptions{});
    check_sparse_table(d, 17'290, 27'654, stragglersim::models::kc_housing_like_layout(27'654), 28);
  }
}

TEST_CASE("models: logistic generators hit their positive fraction within 4 standard errors",
          "[models][tabular]") {
  // The intercept makes the mean of P(b_i = +1) equal the target, so the realised fraction has
  // standard error at most ½/√m.
  const Dataset amazon = stragglersim::models::make_amazon_like(AmazonLikeOptions{});
  const Dataset amazon_half = stragglersim::models::make_amazon_like({20'000, 5000, 0.5, 9});
  const Dataset covtype = stragglersim::models::make_covtype_like({20'000, 2000, 0.572, 9});
  const auto tolerance = [](const Dataset& d) {
    return 4.0 * 0.5 / std::sqrt(static_cast<double>(d.rows()));
  };
  CHECK(std::abs(positive_fraction(amazon) - 0.942) < tolerance(amazon));
  CHECK(std::abs(positive_fraction(amazon_half) - 0.5) < tolerance(amazon_half));
  CHECK(std::abs(positive_fraction(covtype) - 0.572) < tolerance(covtype));
  CHECK(((amazon.labels.array() == 1.0) || (amazon.labels.array() == -1.0)).all());
  // The regression target is real-valued: 17 numeric terms of variance 1/17, 11 one-hot terms
  // of variance ¼ and noise ¼ give Var(b) ≈ 1 + 2.75 + 0.25 = 4 (before the finite-sample
  // spread of the planted weights).
  const Dataset kc = stragglersim::models::make_kc_housing_like(KcHousingLikeOptions{});
  const double variance = (kc.labels.array() - kc.labels.mean()).square().mean();
  CHECK(variance > 1.0);
  CHECK(variance < 16.0);
}

TEST_CASE("models: partition gradients on generated sparse data equal a dense recomputation",
          "[models][tabular]") {
  const auto check = [](const Dataset& sparse_data, const std::string& loss_name) {
    auto dense_data = std::make_shared<Dataset>();
    dense_data->features = DenseRows(sparse(sparse_data).toDense());
    dense_data->labels = sparse_data.labels;
    const auto sparse_ptr = std::make_shared<const Dataset>(sparse_data);
    std::shared_ptr<const stragglersim::models::LossModel> loss =
        loss_name == "logistic" ? stragglersim::models::make_logistic_loss()
                                : stragglersim::models::make_least_squares_loss();
    const Objective on_sparse(sparse_ptr, loss, 1e-3, 7);
    const Objective on_dense(dense_data, loss, 1e-3, 7);
    Eigen::VectorXd x(sparse_data.dimension());
    for (Eigen::Index j = 0; j < x.size(); ++j) x[j] = 0.01 * std::sin(static_cast<double>(j));
    Eigen::MatrixXd g_sparse;
    Eigen::MatrixXd g_dense;
    const double f_sparse = on_sparse.evaluate(x, &g_sparse);
    const double f_dense = on_dense.evaluate(x, &g_dense);
    CHECK(f_sparse == Approx(f_dense).epsilon(1e-12));
    REQUIRE(g_sparse.cols() == 7);
    CHECK((g_sparse - g_dense).norm() <= 1e-12 * g_dense.norm());
    // And against the definition ∇F_j = (1/m) Σ_{i∈P_j} ℓ'(a_iᵀx) a_i, row by row.
    const DenseRows& a = std::get<DenseRows>(dense_data->features);
    Eigen::MatrixXd g_rows = Eigen::MatrixXd::Zero(x.size(), 7);
    for (int j = 0; j < 7; ++j) {
      const auto range = on_dense.partition(j);
      for (Eigen::Index i = range.begin; i < range.end; ++i) {
        g_rows.col(j) += loss->derivative(a.row(i).dot(x), dense_data->labels[i]) *
                         a.row(i).transpose() / static_cast<double>(a.rows());
      }
    }
    CHECK((g_sparse - g_rows).norm() <= 1e-12 * g_rows.norm());
  };
  check(stragglersim::models::make_amazon_like({120, 300, 0.942, 2}), "logistic");
  check(stragglersim::models::make_covtype_like({120, 400, 0.572, 2}), "logistic");
  check(stragglersim::models::make_kc_housing_like({120, 200, 0.5, 2}), "least_squares");
}

TEST_CASE("models: sparse generator draws are pinned", "[models][tabular]") {
  // Boost.Random gives the same draws on every platform; these values pin the draw order
  // (planted weights, then row by row numeric values and categories, then labels).
  const auto columns_of_row0 = [](const Dataset& d) {
    std::vector<Eigen::Index> out;
    for (SparseRows::InnerIterator it(sparse(d), 0); it; ++it) out.push_back(it.index());
    return out;
  };
  const Dataset amazon = stragglersim::models::make_amazon_like({3, 100, 0.942, 1});
  CHECK(amazon.labels == Eigen::Vector3d(1, 1, 1));
  const std::vector<Eigen::Index> amazon_row0 = {
      0,  4,  5,  7,  9,  11, 13, 15, 18, 20, 22, 27, 29, 33, 35, 39, 41, 44, 47, 49, 50, 52, 54,
      56, 59, 61, 62, 64, 66, 68, 70, 73, 75, 77, 78, 80, 82, 85, 87, 89, 91, 92, 94, 97, 98};
  CHECK(columns_of_row0(amazon) == amazon_row0);
  const Dataset covtype = stragglersim::models::make_covtype_like({3, 200, 0.572, 1});
  CHECK(covtype.labels == Eigen::Vector3d(1, 1, -1));
  CHECK(sparse(covtype).coeff(0, 0) == Approx(-0.5548236022911408).epsilon(1e-14));
  CHECK(sparse(covtype).coeff(0, 9) == Approx(-1.2062765101655633).epsilon(1e-14));
  CHECK(columns_of_row0(covtype)[10] == 10);
  CHECK(columns_of_row0(covtype).back() == 199);
  const Dataset kc = stragglersim::models::make_kc_housing_like({3, 64, 0.5, 1});
  CHECK(kc.labels[0] == Approx(-0.072081864002097262).epsilon(1e-14));
  CHECK(kc.labels[2] == Approx(-1.0218319021999416).epsilon(1e-14));
  CHECK(sparse(kc).coeff(0, 16) == Approx(0.62360249086153685).epsilon(1e-14));
  const std::vector<Eigen::Index> kc_one_hot = {17, 19, 21, 23, 27, 36, 45, 47, 49, 61, 63};
  const auto kc_row0 = columns_of_row0(kc);
  CHECK(std::vector<Eigen::Index>(kc_row0.begin() + 17, kc_row0.end()) == kc_one_hot);
}

}  // namespace stragglersim::models
