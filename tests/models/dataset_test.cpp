#include "models/dataset.h"

#include <algorithm>
#include <catch2/catch.hpp>
#include <cmath>
#include <set>

#include "models/synthetic_data.h"

namespace stragglersim::models {

TEST_CASE("models: partition_rows follows floor(j m / k)", "[models][dataset]") {
  CHECK(partition_rows(10, 3, 0).begin == 0);
  CHECK(partition_rows(10, 3, 0).end == 3);
  CHECK(partition_rows(10, 3, 1).begin == 3);
  CHECK(partition_rows(10, 3, 1).end == 6);
  CHECK(partition_rows(10, 3, 2).begin == 6);
  CHECK(partition_rows(10, 3, 2).end == 10);
  CHECK(partition_rows(7, 7, 4).size() == 1);
  // Large m: j·m overflows 32 bits but not Eigen::Index.
  CHECK(partition_rows(3'000'000'000, 7, 3).begin == 3 * 3'000'000'000LL / 7);
}

TEST_CASE("models: partitions tile all rows with sizes differing by at most one",
          "[models][dataset]") {
  for (const Eigen::Index m : {1, 2, 5, 17, 100, 1001}) {
    for (const int k : {1, 2, 3, 7, 16, 64}) {
      INFO("m = " << m << " k = " << k);
      Eigen::Index next = 0;
      Eigen::Index smallest = m;
      Eigen::Index largest = 0;
      for (int j = 0; j < k; ++j) {
        const auto range = partition_rows(m, k, j);
        CHECK(range.begin == next);
        CHECK(range.end >= range.begin);
        next = range.end;
        smallest = std::min(smallest, range.size());
        largest = std::max(largest, range.size());
      }
      CHECK(next == m);
      CHECK(largest - smallest <= 1);
    }
  }
  CHECK_THROWS_AS(partition_rows(10, 0, 0), std::logic_error);
  CHECK_THROWS_AS(partition_rows(10, 3, 3), std::logic_error);
  CHECK_THROWS_AS(partition_rows(10, 3, -1), std::logic_error);
}

TEST_CASE("models: select_rows keeps storage and reorders rows", "[models][dataset]") {
  DenseRows a(3, 2);
  a << 1, 0, 0, 2, 3, 4;
  const Dataset dense{a, Eigen::Vector3d(10, 20, 30)};
  const Dataset sparse{SparseRows(a.sparseView()), dense.labels};
  for (const Dataset* data : {&dense, &sparse}) {
    const Dataset picked = data->select_rows({2, 0, 2});
    CHECK(picked.is_sparse() == data->is_sparse());
    CHECK(picked.rows() == 3);
    CHECK(picked.dimension() == 2);
    CHECK(picked.labels == Eigen::Vector3d(30, 10, 30));
    const DenseRows got = picked.is_sparse() ? DenseRows(std::get<SparseRows>(picked.features))
                                             : std::get<DenseRows>(picked.features);
    DenseRows expected(3, 2);
    expected << 3, 4, 1, 0, 3, 4;
    CHECK(got == expected);
  }
  CHECK(sparse.select_rows({1}).stored_entries() == 1);
  CHECK(dense.select_rows({1}).stored_entries() == 2);
  CHECK_THROWS_AS(dense.select_rows({3}), std::logic_error);
}

// Found by fuzz_config: kc_housing_like with 2 rows has an empty test split, and selecting no
// rows of sparse storage read past Eigen's outer index (AddressSanitizer in the CI stage).
TEST_CASE("models: select_rows of no rows is an empty data set for both storages",
          "[models][dataset]") {
  DenseRows a(2, 3);
  a << 1, 0, 2, 0, 3, 0;
  const Dataset dense{a, Eigen::Vector2d(1, 2)};
  const Dataset sparse{SparseRows(a.sparseView()), dense.labels};
  for (const Dataset* data : {&dense, &sparse}) {
    const Dataset none = data->select_rows({});
    CHECK(none.rows() == 0);
    CHECK(none.dimension() == 3);
    CHECK(none.is_sparse() == data->is_sparse());
    CHECK(none.stored_entries() == 0);
    const auto [train, test] = split_train_test(*data, 0.2, 7);
    CHECK(train.rows() == 2);
    CHECK(test.rows() == 0);
  }
}

TEST_CASE("models: split_train_test is a seeded permutation split", "[models][dataset]") {
  // Labels are the row numbers, so the split can be traced back to rows.
  const Eigen::Index m = 101;
  Dataset all = stragglersim::models::make_gaussian_mixture({m, 3, 1.0, 5});
  all.labels = Eigen::VectorXd::LinSpaced(m, 0.0, static_cast<double>(m - 1));
  const auto [train, test] = split_train_test(all, 0.2, 9);
  CHECK(test.rows() == 20);  // round(0.2 · 101) = round(20.2)
  CHECK(train.rows() == 81);
  std::set<long> seen;
  for (const auto* part : {&train, &test}) {
    for (Eigen::Index i = 0; i < part->rows(); ++i) {
      const auto row = std::lround(part->labels[i]);
      seen.insert(row);
      CHECK(std::get<DenseRows>(part->features).row(i) ==
            std::get<DenseRows>(all.features).row(row));
    }
  }
  CHECK(seen.size() == static_cast<std::size_t>(m));
  // Shuffled: the training rows are not the first 81 in order.
  CHECK(train.labels != Eigen::VectorXd::LinSpaced(81, 0.0, 80.0));

  const auto again = split_train_test(all, 0.2, 9);
  CHECK(again.first.labels == train.labels);
  CHECK(again.second.labels == test.labels);
  CHECK(split_train_test(all, 0.2, 10).second.labels != test.labels);

  const Dataset sparse{SparseRows(std::get<DenseRows>(all.features).sparseView()), all.labels};
  const auto sparse_split = split_train_test(sparse, 0.2, 9);
  CHECK(sparse_split.first.is_sparse());
  CHECK(sparse_split.second.labels == test.labels);

  CHECK(split_train_test(all, 0.0, 9).second.rows() == 0);
  CHECK_THROWS_AS(split_train_test(all, 1.0, 9), std::logic_error);
  CHECK_THROWS_AS(split_train_test(all, -0.1, 9), std::logic_error);
}

TEST_CASE("models: stored_bytes counts every stored value, index, row offset and label of a range",
          "[models][dataset]") {
  Dataset dense = make_gaussian_mixture({7, 5, 1.0, 4});
  auto& a = std::get<DenseRows>(dense.features);
  for (Eigen::Index i = 0; i < 7; ++i) {
    for (Eigen::Index k = 0; k <= i % 5; ++k) a(i, k) = 0.0;  // row i keeps 4 − i mod 5 values
  }
  const Dataset sparse{SparseRows(a.sparseView()), dense.labels};
  SparseRows loose = std::get<SparseRows>(sparse.features);
  loose.uncompress();
  const Dataset uncompressed{std::move(loose), dense.labels};
  for (Eigen::Index begin = 0; begin <= 7; ++begin) {
    for (Eigen::Index end = begin; end <= 7; ++end) {
      INFO("rows " << begin << " to " << end);
      const RowRange range{begin, end};
      CHECK(dense.stored_bytes(range) == (end - begin) * (5 + 1) * 8);
      std::int64_t values = 0;
      for (Eigen::Index i = begin; i < end; ++i) values += 4 - i % 5;
      // value and column index (8 bytes each), one more row offset than rows, the labels
      const std::int64_t expected = values * 16 + (end - begin + 1) * 8 + (end - begin) * 8;
      CHECK(sparse.stored_bytes(range) == expected);
      CHECK(uncompressed.stored_bytes(range) == expected);
    }
  }
  CHECK(dense.stored_bytes() == 7 * 6 * 8);
}

}  // namespace stragglersim::models
