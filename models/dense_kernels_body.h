#pragma once
// Internal to models/dense_kernels.cpp (and its test): the bodies of the dense kernels, always
// inlined into each instruction-set clone. A test compiles them for the baseline instruction set
// and compares them bit for bit with the clone this CPU runs.

#include <Eigen/Core>
#include <cstring>

// The helpers take and return four-double vectors by value; they are always inlined, so no call
// crosses the ABI that -Wpsabi warns about (it differs with and without AVX). GCC reports it
// at the end of the including file, so the warning stays off there (only the kernels' .cpp and
// their test include this header).
#if defined(__GNUC__)
#pragma GCC diagnostic ignored "-Wpsabi"
#endif

namespace stragglersim::models::internal::body {

// Four doubles: one AVX register, or two SSE2 registers where the clone has no AVX. The
// operations below are lane-wise IEEE operations without fused multiply-add, so both lowerings
// give the same bytes.
using Vec4 = double __attribute__((vector_size(32)));
inline constexpr Eigen::Index kLanes = 4;
inline constexpr Eigen::Index kStep = 2 * kLanes;  // two running vectors: eight sums

[[gnu::always_inline]] inline Vec4 load(const double* at) {
  Vec4 v;
  std::memcpy(&v, at, sizeof v);
  return v;
}

[[gnu::always_inline]] inline void store(double* at, Vec4 v) { std::memcpy(at, &v, sizeof v); }

[[gnu::always_inline]] inline Vec4 broadcast(double w) { return Vec4{w, w, w, w}; }

[[gnu::always_inline]] inline double dot(const double* row, Eigen::Index p, const double* x) {
  Vec4 low = broadcast(0.0);
  Vec4 high = low;
  const Eigen::Index body = p - p % kStep;
  for (Eigen::Index j = 0; j < body; j += kStep) {
    low += load(row + j) * load(x + j);
    high += load(row + j + kLanes) * load(x + j + kLanes);
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
  const Vec4 w0 = broadcast(w[0]);
  const Vec4 w1 = broadcast(w[1]);
  const Vec4 w2 = broadcast(w[2]);
  const Vec4 w3 = broadcast(w[3]);
  const Eigen::Index body = p - p % kLanes;
  for (Eigen::Index j = 0; j < body; j += kLanes) {
    const Vec4 terms =
        ((w0 * load(a0 + j) + w1 * load(a1 + j)) + w2 * load(a2 + j)) + w3 * load(a3 + j);
    store(sum + j, load(sum + j) + terms);
  }
  for (Eigen::Index j = body; j < p; ++j) {
    sum[j] += ((w[0] * a0[j] + w[1] * a1[j]) + w[2] * a2[j]) + w[3] * a3[j];
  }
}

[[gnu::always_inline]] inline void update(const double* row,
                                          Eigen::Index p,
                                          double w,
                                          double* sum) {
  const Vec4 weight = broadcast(w);
  const Eigen::Index body = p - p % kLanes;
  for (Eigen::Index j = 0; j < body; j += kLanes) {
    store(sum + j, load(sum + j) + weight * load(row + j));
  }
  for (Eigen::Index j = body; j < p; ++j) {
    sum[j] += w * row[j];
  }
}

}  // namespace stragglersim::models::internal::body
