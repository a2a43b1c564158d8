#pragma once
// Internal to models/dense_kernels.cpp (and its test): the bodies of the dense kernels, always
// inlined into each instruction-set version. A test compiles them for the baseline instruction
// set and compares them bit for bit with the version this CPU runs.

#include <Eigen/Core>
#include <cstring>

namespace stragglersim::models::internal::body {

// Four doubles: one AVX register, or two SSE2 registers in the baseline version. The operations
// below are lane-wise IEEE operations without fused multiply-add, so both give the same bytes.
// Vectors are passed by reference only (by value, their calling convention differs with and
// without AVX).
using Vec4 = double __attribute__((vector_size(32)));
inline constexpr Eigen::Index kLanes = 4;
inline constexpr Eigen::Index kStep = 2 * kLanes;  // two running vectors: eight sums

[[gnu::always_inline]] inline void load(Vec4& v, const double* at) {
  std::memcpy(&v, at, sizeof v);
}

[[gnu::always_inline]] inline void store(double* at, const Vec4& v) {
  std::memcpy(at, &v, sizeof v);
}

[[gnu::always_inline]] inline double dot(const double* row, Eigen::Index p, const double* x) {
  Vec4 low = {0.0, 0.0, 0.0, 0.0};
  Vec4 high = low;
  Vec4 a;
  Vec4 b;
  const Eigen::Index body = p - p % kStep;
  for (Eigen::Index j = 0; j < body; j += kStep) {
    load(a, row + j);
    load(b, x + j);
    low += a * b;
    load(a, row + j + kLanes);
    load(b, x + j + kLanes);
    high += a * b;
  }
  // ((s₀ + s₄) + (s₁ + s₅)) + ((s₂ + s₆) + (s₃ + s₇)), s₀..s₃ in `low` and s₄..s₇ in `high`.
  const Vec4 pair = low + high;
  double sum = (pair[0] + pair[1]) + (pair[2] + pair[3]);
  for (Eigen::Index j = body; j < p; ++j) {
    sum += row[j] * x[j];
  }
  return sum;
}

[[gnu::always_inline]] inline void update4(const double* rows,
                                           Eigen::Index p,
                                           const double* w,
                                           double* sum) {
  const double* a0 = rows;
  const double* a1 = rows + p;
  const double* a2 = rows + 2 * p;
  const double* a3 = rows + 3 * p;
  const Vec4 w0 = {w[0], w[0], w[0], w[0]};
  const Vec4 w1 = {w[1], w[1], w[1], w[1]};
  const Vec4 w2 = {w[2], w[2], w[2], w[2]};
  const Vec4 w3 = {w[3], w[3], w[3], w[3]};
  Vec4 r0;
  Vec4 r1;
  Vec4 r2;
  Vec4 r3;
  Vec4 s;
  const Eigen::Index body = p - p % kLanes;
  for (Eigen::Index j = 0; j < body; j += kLanes) {
    load(r0, a0 + j);
    load(r1, a1 + j);
    load(r2, a2 + j);
    load(r3, a3 + j);
    load(s, sum + j);
    s += ((w0 * r0 + w1 * r1) + w2 * r2) + w3 * r3;
    store(sum + j, s);
  }
  for (Eigen::Index j = body; j < p; ++j) {
    sum[j] += ((w[0] * a0[j] + w[1] * a1[j]) + w[2] * a2[j]) + w[3] * a3[j];
  }
}

[[gnu::always_inline]] inline void update(const double* row,
                                          Eigen::Index p,
                                          double w,
                                          double* sum) {
  const Vec4 weight = {w, w, w, w};
  Vec4 a;
  Vec4 s;
  const Eigen::Index body = p - p % kLanes;
  for (Eigen::Index j = 0; j < body; j += kLanes) {
    load(a, row + j);
    load(s, sum + j);
    s += weight * a;
    store(sum + j, s);
  }
  for (Eigen::Index j = body; j < p; ++j) {
    sum[j] += w * row[j];
  }
}

}  // namespace stragglersim::models::internal::body
