#include "models/dense_row_kernels.h"

#include <cstring>

namespace stragglersim::models::internal {

namespace {

// The helpers below pass 64-byte vectors by value; they are internal and inlined, so the
// calling convention GCC warns about is never used across a translation unit.
#pragma GCC diagnostic ignored "-Wpsabi"

// Eight doubles: GCC lowers each operation to two AVX or four SSE2 instructions, lane by lane,
// so the arithmetic is the same on both paths.
using Lanes = double __attribute__((vector_size(64)));
constexpr Eigen::Index kLanes = 8;

inline Lanes load(const double* from) {
  Lanes v;
  std::memcpy(&v, from, sizeof v);
  return v;
}

inline void store(double* to, Lanes v) { std::memcpy(to, &v, sizeof v); }

inline Lanes broadcast(double w) { return Lanes{w, w, w, w, w, w, w, w}; }

inline double reduce(Lanes v) {
  return ((v[0] + v[1]) + (v[2] + v[3])) + ((v[4] + v[5]) + (v[6] + v[7]));
}

}  // namespace

__attribute__((target_clones("avx2", "default"))) void dense_dots(
    const double* first, Eigen::Index p, Eigen::Index rows, const double* x, double* z) {
  const Eigen::Index body = p - p % kLanes;
  if (rows == 4) {
    // Four rows at once share the loads of x.
    const double* a0 = first;
    const double* a1 = first + p;
    const double* a2 = first + 2 * p;
    const double* a3 = first + 3 * p;
    Lanes s0 = {};
    Lanes s1 = {};
    Lanes s2 = {};
    Lanes s3 = {};
    for (Eigen::Index k = 0; k < body; k += kLanes) {
      const Lanes xk = load(x + k);
      s0 += load(a0 + k) * xk;
      s1 += load(a1 + k) * xk;
      s2 += load(a2 + k) * xk;
      s3 += load(a3 + k) * xk;
    }
    z[0] = reduce(s0);
    z[1] = reduce(s1);
    z[2] = reduce(s2);
    z[3] = reduce(s3);
    for (Eigen::Index k = body; k < p; ++k) {
      z[0] += a0[k] * x[k];
      z[1] += a1[k] * x[k];
      z[2] += a2[k] * x[k];
      z[3] += a3[k] * x[k];
    }
    return;
  }
  for (Eigen::Index r = 0; r < rows; ++r) {
    const double* a = first + r * p;
    Lanes s = {};
    for (Eigen::Index k = 0; k < body; k += kLanes) {
      s += load(a + k) * load(x + k);
    }
    double dot = reduce(s);
    for (Eigen::Index k = body; k < p; ++k) {
      dot += a[k] * x[k];
    }
    z[r] = dot;
  }
}

__attribute__((target_clones("avx2", "default"))) void dense_update4(const double* first,
                                                                     Eigen::Index p,
                                                                     const double* w,
                                                                     double* sum) {
  const double* a0 = first;
  const double* a1 = first + p;
  const double* a2 = first + 2 * p;
  const double* a3 = first + 3 * p;
  const Eigen::Index body = p - p % kLanes;
  const Lanes w0 = broadcast(w[0]);
  const Lanes w1 = broadcast(w[1]);
  const Lanes w2 = broadcast(w[2]);
  const Lanes w3 = broadcast(w[3]);
  for (Eigen::Index k = 0; k < body; k += kLanes) {
    const Lanes update =
        ((w0 * load(a0 + k) + w1 * load(a1 + k)) + w2 * load(a2 + k)) + w3 * load(a3 + k);
    store(sum + k, load(sum + k) + update);
  }
  for (Eigen::Index k = body; k < p; ++k) {
    sum[k] += ((w[0] * a0[k] + w[1] * a1[k]) + w[2] * a2[k]) + w[3] * a3[k];
  }
}

}  // namespace stragglersim::models::internal
