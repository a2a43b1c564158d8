#include "models/sparse_kernels.h"

#include <algorithm>
#include <catch2/catch.hpp>
#include <cmath>
#include <cstring>
#include <fstream>
#include <random>
#include <string>
#include <vector>

#include "models/dataset.h"
#include "models/row_kernels.h"
#include "models/sparse_kernels_body.h"

namespace {

using stragglersim::models::RowRange;
using stragglersim::models::SparseRows;
using stragglersim::models::internal::fused_pass;
using stragglersim::models::internal::fused_pass_many;
using stragglersim::models::internal::kSparseChunk;
using stragglersim::models::internal::margin_pass_many;
using stragglersim::models::internal::sparse_group;
using stragglersim::models::internal::sparse_groups;
using stragglersim::models::internal::sparse_kernel_isa;
using stragglersim::models::internal::sparse_margins_rows;
using stragglersim::models::internal::sparse_updates_rows;
using stragglersim::models::internal::SparseArrays;
namespace sparse_body = stragglersim::models::internal::sparse_body;

bool sparse_same_bits(double a, double b) { return std::memcmp(&a, &b, sizeof a) == 0; }

bool sparse_cpu_has(const std::string& flag) {
  std::ifstream cpuinfo("/proc/cpuinfo");
  std::string line;
  while (std::getline(cpuinfo, line)) {
    if (line.rfind("flags", 0) == 0) {
      return (line + " ").find(" " + flag + " ") != std::string::npos;
    }
  }
  return false;
}

/// m × p rows with about `per_row` non-zeros each (some rows empty), N(0, 1) values. With
/// `shuffled`, each row's indices are stored out of order; with `gaps`, the matrix is left
/// uncompressed (free room after each row, the row sizes in innerNonZeroPtr).
SparseRows sparse_random_rows(Eigen::Index m,
                              Eigen::Index p,
                              int per_row,
                              std::uint64_t seed,
                              bool shuffled = false,
                              bool gaps = false) {
  std::mt19937_64 engine(seed);
  std::normal_distribution<double> normal(0.0, 1.0);
  std::uniform_int_distribution<Eigen::Index> column(0, p - 1);
  std::vector<std::vector<std::pair<std::int64_t, double>>> rows(static_cast<std::size_t>(m));
  for (Eigen::Index i = 0; i < m; ++i) {
    auto& row = rows[static_cast<std::size_t>(i)];
    const int count = i % 7 == 3 ? 0 : per_row;  // every seventh row from the fourth empty
    for (int k = 0; k < count; ++k) {
      const std::int64_t j = column(engine);
      if (std::none_of(row.begin(), row.end(), [&](const auto& e) { return e.first == j; })) {
        row.emplace_back(j, normal(engine));
      }
    }
    std::sort(row.begin(), row.end());
    if (shuffled) {
      std::shuffle(row.begin(), row.end(), engine);
    }
  }
  SparseRows a(m, p);
  if (gaps) {
    a.reserve(Eigen::VectorXi::Constant(m, per_row + 3));
    for (Eigen::Index i = 0; i < m; ++i) {
      for (const auto& [j, v] : rows[static_cast<std::size_t>(i)]) a.insert(i, j) = v;
    }
    return a;
  }
  std::int64_t total = 0;
  for (const auto& row : rows) total += static_cast<std::int64_t>(row.size());
  a.resizeNonZeros(total);
  std::int64_t at = 0;
  for (Eigen::Index i = 0; i < m; ++i) {
    a.outerIndexPtr()[i] = at;
    for (const auto& [j, v] : rows[static_cast<std::size_t>(i)]) {
      a.innerIndexPtr()[at] = j;
      a.valuePtr()[at] = v;
      ++at;
    }
  }
  a.outerIndexPtr()[m] = at;
  return a;
}

SparseArrays sparse_arrays_of(const SparseRows& a) {
  SparseArrays out;
  out.outer = a.outerIndexPtr();
  out.counts = a.innerNonZeroPtr();
  out.index = a.innerIndexPtr();
  out.values = a.valuePtr();
  return out;
}

std::vector<double> sparse_values(std::size_t count, std::uint64_t seed) {
  std::mt19937_64 engine(seed);
  std::normal_distribution<double> normal(0.0, 1.0);
  std::vector<double> out(count);
  for (double& v : out) v = normal(engine);
  return out;
}

// The loss kernels of the tests: least squares, and a logistic-like one (exp and log), written
// on blocks as models/loss_model.cpp writes its kernels.
auto sparse_squares_kernel() {
  return [](const auto& z, const auto& b, auto& loss, auto& slope) {
    slope = z - b;
    loss = 0.5 * slope.square();
  };
}
auto sparse_logistic_kernel() {
  return [](const auto& z, const auto& b, auto& loss, auto& slope) {
    const auto e = (-(b * z)).exp().eval();
    slope = -b * e / (1.0 + e);
    loss = (1.0 + e).log();
  };
}

}  // namespace

TEST_CASE("sparse kernels: the margins sum value times x over each row in order, bit for bit",
          "[sparse]") {
  // Rows sorted, stored out of order and uncompressed (free room after each row); a range of
  // rows from the third. The dispatched version, the baseline compilation of the same body
  // (this file is built without AVX) and a scalar loop give the same bytes.
  const Eigen::Index m = 23;
  const Eigen::Index p = 40;
  for (const bool shuffled : {false, true}) {
    for (const bool gaps : {false, true}) {
      const SparseRows a = sparse_random_rows(m, p, 9, 11, shuffled, gaps);
      const SparseArrays arrays = sparse_arrays_of(a);
      for (const Eigen::Index width : {4, 8, 12, 16}) {
        const auto x = sparse_values(static_cast<std::size_t>(p * width), 12);
        const Eigen::Index rows = m - 2;
        std::vector<double> got(static_cast<std::size_t>(rows * width), 7.0);
        std::vector<double> baseline = got;
        sparse_margins_rows(arrays, 2, rows, width, x.data(), got.data());
        sparse_body::margins_of_width<2, 8>(arrays, 2, rows, width, x.data(), baseline.data());
        bool all_same = true;
        for (Eigen::Index r = 0; r < rows; ++r) {
          for (Eigen::Index s = 0; s < width; ++s) {
            double expected = 0.0;
            for (std::int64_t k = arrays.outer[r + 2]; k < arrays.end(r + 2); ++k) {
              expected +=
                  arrays.values[k] * x[static_cast<std::size_t>(arrays.index[k] * width + s)];
            }
            const auto at = static_cast<std::size_t>(r * width + s);
            all_same = all_same && sparse_same_bits(got[at], expected) &&
                       sparse_same_bits(baseline[at], expected);
          }
        }
        INFO("width " << width << (shuffled ? ", shuffled" : "") << (gaps ? ", gaps" : "")
                      << ", version " << sparse_kernel_isa());
        CHECK(all_same);
      }
    }
  }
}

TEST_CASE("sparse kernels: the updates add w times value row by row, skipping zero weights",
          "[sparse]") {
  // Rows whose weights are all non-zero, and rows (flagged) with ±0 weights among them, which
  // must leave their −0 sums −0 (w·v = ±0 added to −0 could give +0).
  const Eigen::Index m = 19;
  const Eigen::Index p = 30;
  for (const bool gaps : {false, true}) {
    const SparseRows a = sparse_random_rows(m, p, 8, 21, false, gaps);
    const SparseArrays arrays = sparse_arrays_of(a);
    for (const Eigen::Index width : {4, 8, 12, 16}) {
      auto w = sparse_values(static_cast<std::size_t>(m * width), 22);
      std::vector<unsigned char> has_zero(static_cast<std::size_t>(m), 0);
      for (Eigen::Index r = 0; r < m; r += 3) {
        for (Eigen::Index s = r % width; s < width; s += 3) {
          w[static_cast<std::size_t>(r * width + s)] = s % 2 == 0 ? 0.0 : -0.0;
        }
        has_zero[static_cast<std::size_t>(r)] = 1;
      }
      const std::vector<double> start(static_cast<std::size_t>(p * width), -0.0);
      std::vector<double> got = start;
      std::vector<double> baseline = start;
      std::vector<double> expected = start;
      sparse_updates_rows(arrays, 0, m, width, w.data(), has_zero.data(), got.data());
      sparse_body::updates_of_width<2, 8>(
          arrays, 0, m, width, w.data(), has_zero.data(), baseline.data());
      for (Eigen::Index r = 0; r < m; ++r) {
        for (std::int64_t k = arrays.outer[r]; k < arrays.end(r); ++k) {
          for (Eigen::Index s = 0; s < width; ++s) {
            const double weight = w[static_cast<std::size_t>(r * width + s)];
            if (weight != 0.0) {
              expected[static_cast<std::size_t>(arrays.index[k] * width + s)] +=
                  weight * arrays.values[k];
            }
          }
        }
      }
      bool all_same = true;
      for (std::size_t i = 0; i < got.size(); ++i) {
        all_same = all_same && sparse_same_bits(got[i], expected[i]) &&
                   sparse_same_bits(baseline[i], expected[i]);
      }
      INFO("width " << width << (gaps ? ", gaps" : "") << ", version " << sparse_kernel_isa());
      CHECK(all_same);
    }
  }
}

TEST_CASE("sparse kernels: the multi-vector pass is fused_pass's bytes for every chunk",
          "[sparse][many]") {
  // The row_kernels.h pass on 300 rows of 37 features: chunks of 32, 64 and 256 rows; ranges
  // starting on and off a block of 32 and ending inside and at a chunk's end; S across the
  // groups' widths and up to three groups (1 … 33); rows sorted, stored out of order and
  // uncompressed. Labels 0 on rows 0 … 9 and a zero first column of x: zero weights (least
  // squares, and −0 from the logistic-like kernel), whose −0 sums must stay −0.
  const Eigen::Index m = 300;
  const Eigen::Index p = 37;
  Eigen::VectorXd labels(m);
  for (Eigen::Index i = 0; i < m; ++i) labels[i] = i < 10 ? 0.0 : (i % 3 == 0 ? 1.0 : -1.0);
  int cases = 0;
  for (const int layout : {0, 1, 2}) {
    const SparseRows a = sparse_random_rows(m, p, 6, 31, layout == 1, layout == 2);
    for (const Eigen::Index columns : {1, 3, 5, 9, 16, 17, 33}) {
      Eigen::MatrixXd x = Eigen::MatrixXd::Zero(p, columns);
      for (Eigen::Index s = 1; s < columns; ++s) {
        for (Eigen::Index k = 0; k < p; ++k) {
          x(k, s) = 0.3 * std::sin(static_cast<double>(7 * s + k));
        }
      }
      for (const Eigen::Index chunk : {Eigen::Index{32}, Eigen::Index{64}, kSparseChunk}) {
        bool all_same = true;
        for (const RowRange rows : {RowRange{0, m},
                                    RowRange{1, 97},
                                    RowRange{32, 64},
                                    RowRange{33, 33},
                                    RowRange{5, 291},
                                    RowRange{40, 296}}) {
          for (const bool logistic : {false, true}) {
            const Eigen::MatrixXd start = Eigen::MatrixXd::Constant(p, columns, -0.0);
            Eigen::MatrixXd sums = start;
            Eigen::VectorXd totals = Eigen::VectorXd::Zero(columns);
            if (logistic) {
              fused_pass_many(
                  a, labels, rows, x, sums, totals.data(), sparse_logistic_kernel(), chunk);
            } else {
              fused_pass_many(
                  a, labels, rows, x, sums, totals.data(), sparse_squares_kernel(), chunk);
            }
            for (Eigen::Index s = 0; s < columns; ++s) {
              Eigen::VectorXd sum = start.col(s);
              const Eigen::VectorXd column = x.col(s);
              const double total =
                  logistic ? fused_pass(a, labels, rows, column, sum, sparse_logistic_kernel())
                           : fused_pass(a, labels, rows, column, sum, sparse_squares_kernel());
              all_same = all_same && sparse_same_bits(total, totals[s]) &&
                         std::memcmp(sum.data(), sums.col(s).data(), sizeof(double) * p) == 0;
            }
          }
        }
        INFO("layout " << layout << ", S = " << columns << ", chunk " << chunk);
        CHECK(all_same);
        ++cases;
      }
    }
  }
  CHECK(cases == 3 * 7 * 3);
}

TEST_CASE("sparse kernels: the multi-vector margins are margin_pass's bytes for every chunk",
          "[sparse][many]") {
  const Eigen::Index m = 100;
  const Eigen::Index p = 29;
  stragglersim::models::Dataset data{sparse_random_rows(m, p, 5, 41), Eigen::VectorXd(m)};
  for (Eigen::Index i = 0; i < m; ++i) data.labels[i] = i % 2 == 0 ? 1.0 : -1.0;
  for (const Eigen::Index columns : {2, 7, 17}) {
    Eigen::MatrixXd x(p, columns);
    for (Eigen::Index s = 0; s < columns; ++s) {
      for (Eigen::Index k = 0; k < p; ++k) {
        x(k, s) = 0.4 * std::cos(static_cast<double>(5 * s + k));
      }
    }
    for (const Eigen::Index chunk : {Eigen::Index{32}, Eigen::Index{64}, kSparseChunk}) {
      bool all_same = true;
      for (const RowRange rows : {RowRange{0, m}, RowRange{3, 70}, RowRange{64, 99}}) {
        Eigen::MatrixXd z(rows.size(), columns);
        Eigen::MatrixXd losses(rows.size(), columns);
        margin_pass_many(data, rows, x, z, losses, sparse_logistic_kernel(), chunk);
        for (Eigen::Index s = 0; s < columns; ++s) {
          Eigen::VectorXd one_z(rows.size());
          Eigen::VectorXd one_losses(rows.size());
          const Eigen::VectorXd column = x.col(s);
          stragglersim::models::internal::margin_pass(
              data, rows, column, one_z, one_losses, sparse_logistic_kernel());
          const auto bytes = sizeof(double) * static_cast<std::size_t>(rows.size());
          all_same = all_same && std::memcmp(one_z.data(), z.col(s).data(), bytes) == 0 &&
                     std::memcmp(one_losses.data(), losses.col(s).data(), bytes) == 0;
        }
      }
      INFO("S = " << columns << ", chunk " << chunk);
      CHECK(all_same);
    }
  }
}

TEST_CASE("sparse kernels: the columns form the fewest groups of at most 16, as even as can be",
          "[sparse]") {
  CHECK(sparse_groups(1) == 1);
  CHECK(sparse_groups(16) == 1);
  CHECK(sparse_groups(17) == 2);
  CHECK(sparse_groups(33) == 3);
  for (const Eigen::Index columns : {1, 2, 5, 16, 17, 20, 32, 33, 48}) {
    const Eigen::Index groups = sparse_groups(columns);
    Eigen::Index next = 0;
    for (Eigen::Index g = 0; g < groups; ++g) {
      const auto group = sparse_group(columns, g);
      INFO("S = " << columns << ", group " << g);
      CHECK(group.first == next);
      CHECK(group.count >= columns / groups);
      CHECK(group.count <= columns / groups + 1);
      CHECK(group.count <= 16);
      CHECK(group.width % 4 == 0);
      CHECK(group.width >= group.count);
      CHECK(group.width < group.count + 4);
      next += group.count;
    }
    CHECK(next == columns);
  }
}

TEST_CASE("sparse kernels: the version run matches the CPU's instruction set", "[sparse]") {
#if defined(__x86_64__) || defined(__i386__)
  CHECK(sparse_kernel_isa() == (sparse_cpu_has("avx") ? "avx" : "baseline"));
#else
  CHECK(sparse_kernel_isa() == "baseline");
#endif
}
