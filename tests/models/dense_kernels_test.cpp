#include "models/dense_kernels.h"

#include <algorithm>
#include <catch2/catch.hpp>
#include <cmath>
#include <cstring>
#include <fstream>
#include <random>
#include <string>
#include <vector>

#include "models/dense_kernels_body.h"

namespace {

using stragglersim::models::internal::dense_dot;
using stragglersim::models::internal::dense_dot4_many;
using stragglersim::models::internal::dense_gram_columns;
using stragglersim::models::internal::dense_kernel_isa;
using stragglersim::models::internal::dense_many_kernel_isa;
using stragglersim::models::internal::dense_update;
using stragglersim::models::internal::dense_update4;
using stragglersim::models::internal::dense_update4_many;
using stragglersim::models::internal::gram_packed_index;
namespace body = stragglersim::models::internal::body;

std::vector<double> random_values(std::size_t count, std::uint64_t seed) {
  std::mt19937_64 engine(seed);
  std::normal_distribution<double> normal(0.0, 1.0);
  std::vector<double> out(count);
  for (double& v : out) v = normal(engine);
  return out;
}

// The documented order written out with scalars: entry j into sum j mod 8 for the first
// p − p mod 8 entries, ((s0 + s4) + (s1 + s5)) + ((s2 + s6) + (s3 + s7)), then the tail.
double reference_dot(const double* row, long p, const double* x) {
  double s[8] = {0, 0, 0, 0, 0, 0, 0, 0};
  const long body_end = p - p % 8;
  for (long j = 0; j < body_end; ++j) s[j % 8] += row[j] * x[j];
  double sum = ((s[0] + s[4]) + (s[1] + s[5])) + ((s[2] + s[6]) + (s[3] + s[7]));
  for (long j = body_end; j < p; ++j) sum += row[j] * x[j];
  return sum;
}

bool same_bits(double a, double b) { return std::memcmp(&a, &b, sizeof a) == 0; }

bool cpu_has(const std::string& flag) {
  std::ifstream cpuinfo("/proc/cpuinfo");
  std::string line;
  while (std::getline(cpuinfo, line)) {
    if (line.rfind("flags", 0) == 0) {
      return (line + " ").find(" " + flag + " ") != std::string::npos;
    }
  }
  return false;
}

bool cpu_has_avx() { return cpu_has("avx"); }

const long kShapes[] = {1, 3, 4, 5, 7, 8, 9, 12, 15, 16, 17, 200, 203};

}  // namespace

TEST_CASE("dense kernels: the dispatched dot is the documented order, bit for bit", "[dense]") {
  for (const long p : kShapes) {
    const auto row = random_values(static_cast<std::size_t>(p), 1);
    const auto x = random_values(static_cast<std::size_t>(p), 2);
    const double got = dense_dot(row.data(), p, x.data());
    INFO("p = " << p << ", version " << dense_kernel_isa());
    CHECK(same_bits(got, reference_dot(row.data(), p, x.data())));
    // The baseline compilation of the same body (this file is built without AVX) agrees too.
    CHECK(same_bits(got, body::dot(row.data(), p, x.data())));
    long double exact = 0.0L;
    for (long j = 0; j < p; ++j) {
      exact += static_cast<long double>(row[static_cast<std::size_t>(j)]) *
               static_cast<long double>(x[static_cast<std::size_t>(j)]);
    }
    CHECK(std::abs(got - static_cast<double>(exact)) <= 1e-13 * static_cast<double>(p));
  }
}

TEST_CASE("dense kernels: the updates add w·a in the documented order, bit for bit", "[dense]") {
  for (const long p : kShapes) {
    const auto size = static_cast<std::size_t>(p);
    const auto rows = random_values(4 * size, 3);
    const auto w = random_values(4, 4);
    const auto start = random_values(size, 5);
    std::vector<double> four = start;
    dense_update4(rows.data(), p, w.data(), four.data());
    std::vector<double> four_body = start;
    body::update4(rows.data(), p, w.data(), four_body.data());
    std::vector<double> one = start;
    dense_update(rows.data() + size, p, w[1], one.data());
    INFO("p = " << p << ", version " << dense_kernel_isa());
    for (std::size_t j = 0; j < size; ++j) {
      const double terms = ((w[0] * rows[j] + w[1] * rows[size + j]) + w[2] * rows[2 * size + j]) +
                           w[3] * rows[3 * size + j];
      CHECK(same_bits(four[j], start[j] + terms));
      CHECK(same_bits(four_body[j], four[j]));
      CHECK(same_bits(one[j], start[j] + w[1] * rows[size + j]));
    }
  }
}

TEST_CASE("dense kernels: the multi-column dot is the one-column dot's bytes, column by column",
          "[dense]") {
  // Column counts with and without a partial tile; x with a leading dimension past p.
  for (const long p : kShapes) {
    for (const long columns : {1L, 2L, 3L, 4L, 5L, 6L, 7L, 16L, 17L}) {
      const long ldx = p + 3;
      const auto rows = random_values(static_cast<std::size_t>(4 * p), 7);
      const auto x = random_values(static_cast<std::size_t>(ldx * columns), 8);
      std::vector<double> z(static_cast<std::size_t>(4 * columns));
      std::vector<double> z_body(z.size());
      std::vector<double> z_wide(z.size());
      dense_dot4_many(rows.data(), p, x.data(), ldx, columns, z.data());
      // The baseline compilation of both tile widths.
      body::dot4_many<body::kManyColumns>(rows.data(), p, x.data(), ldx, columns, z_body.data());
      body::dot4_many<body::kManyColumnsAvx512>(
          rows.data(), p, x.data(), ldx, columns, z_wide.data());
      INFO("p = " << p << ", columns " << columns << ", version " << dense_many_kernel_isa());
      bool all_same = true;
      for (long c = 0; c < columns; ++c) {
        for (long r = 0; r < 4; ++r) {
          const auto at = static_cast<std::size_t>(4 * c + r);
          const double one = dense_dot(rows.data() + r * p, p, x.data() + c * ldx);
          all_same = all_same && same_bits(z[at], one) && same_bits(z_body[at], one) &&
                     same_bits(z_wide[at], one) &&
                     same_bits(one, reference_dot(rows.data() + r * p, p, x.data() + c * ldx));
        }
      }
      CHECK(all_same);
    }
  }
}

TEST_CASE("dense kernels: the multi-column update is the one-column update's bytes", "[dense]") {
  for (const long p : kShapes) {
    for (const long columns : {1L, 2L, 3L, 4L, 5L, 6L, 7L, 16L, 17L}) {
      const long lds = p + 1;
      const auto size = static_cast<std::size_t>(lds * columns);
      const auto rows = random_values(static_cast<std::size_t>(4 * p), 9);
      const auto w = random_values(static_cast<std::size_t>(4 * columns), 10);
      const auto start = random_values(size, 11);
      std::vector<double> many = start;
      std::vector<double> many_body = start;
      std::vector<double> one = start;
      dense_update4_many(rows.data(), p, w.data(), columns, many.data(), lds);
      std::vector<double> many_wide = start;
      body::update4_many<body::kManyColumns>(
          rows.data(), p, w.data(), columns, many_body.data(), lds);
      body::update4_many<body::kManyColumnsAvx512>(
          rows.data(), p, w.data(), columns, many_wide.data(), lds);
      for (long c = 0; c < columns; ++c) {
        dense_update4(rows.data(), p, w.data() + 4 * c, one.data() + c * lds);
      }
      INFO("p = " << p << ", columns " << columns << ", version " << dense_many_kernel_isa());
      // The padding between columns (entry p of each) is left alone too.
      CHECK(std::memcmp(many.data(), one.data(), size * sizeof(double)) == 0);
      CHECK(std::memcmp(many_body.data(), one.data(), size * sizeof(double)) == 0);
      CHECK(std::memcmp(many_wide.data(), one.data(), size * sizeof(double)) == 0);
      CHECK(std::memcmp(one.data(), start.data(), size * sizeof(double)) != 0);
    }
  }
}

TEST_CASE("dense kernels: the Gram columns are plain in-order sums, bit for bit", "[dense]") {
  // Widths with one and several column blocks; row counts below, at and past a chunk of rows
  // (32768 / ld, at least 16), so that the chunked walk meets the plain loop at every boundary.
  for (const long ld : {8L, 16L, 40L}) {
    const long chunk = std::max(16L, 32768L / ld);
    for (const long m : {1L, 5L, chunk, chunk + 3, 2 * chunk + 1}) {
      const auto size = static_cast<std::size_t>(ld);
      const auto s = random_values(static_cast<std::size_t>(m) * size, 6);  // row-major
      std::vector<double> packed(s.size());
      for (long r = 0; r < m; ++r) {
        for (long c = 0; c < ld; ++c) {
          packed[static_cast<std::size_t>(gram_packed_index(m, r, c))] =
              s[static_cast<std::size_t>(r * ld + c)];
        }
      }
      std::vector<double> h(size * size, 0.0);
      std::vector<double> h_body(size * size, 0.0);
      // All columns in one call here, one block of eight per call there: the same bytes.
      dense_gram_columns(packed.data(), m, ld, 0, ld, h.data());
      for (long j0 = 0; j0 < ld; j0 += 8) {
        body::gram_columns(packed.data(), m, ld, j0, j0 + 8, h_body.data());
      }
      INFO("ld = " << ld << ", m = " << m << ", version " << dense_kernel_isa());
      for (long i = 0; i < ld; ++i) {
        for (long j = 0; j <= i; ++j) {
          double plain = 0.0;
          for (long r = 0; r < m; ++r) {
            const double product =
                s[static_cast<std::size_t>(r * ld + i)] * s[static_cast<std::size_t>(r * ld + j)];
            plain += product;
          }
          const auto at = static_cast<std::size_t>(i * ld + j);
          CHECK(same_bits(h[at], plain));
          CHECK(same_bits(h_body[at], plain));
        }
      }
    }
  }
}

TEST_CASE("dense kernels: the version run matches the CPU's instruction set", "[dense]") {
#if defined(__x86_64__) || defined(__i386__)
  CHECK(dense_kernel_isa() == (cpu_has_avx() ? "avx" : "baseline"));
  const bool avx512 = cpu_has_avx() && cpu_has("avx512f") && cpu_has("avx512vl");
  CHECK(dense_many_kernel_isa() == (avx512 ? "avx512" : cpu_has_avx() ? "avx" : "baseline"));
#else
  CHECK(dense_kernel_isa() == "baseline");
  CHECK(dense_many_kernel_isa() == "baseline");
#endif
}
