#include "models/dense_kernels.h"

#include "models/base/invariant.h"
#include "models/dense_kernels_body.h"

// Each kernel is compiled twice from its body: for the baseline instruction set, and with
// target("avx") where the compiler targets x86. The version is chosen on first use from the
// CPU's flags and kept in a function-local static. (Not an ifunc through target_clones: its
// resolver runs while the program is being relocated, before a sanitizer runtime is ready, and
// Clang and GCC disagree on where the attribute may be declared.)
#if defined(__x86_64__) || defined(__i386__)
#define STRAGGLERSIM_HAVE_AVX_VERSION 1
#define STRAGGLERSIM_AVX __attribute__((target("avx")))
// The multi-column kernels also have a version for AVX-512 CPUs: the same 256-bit arithmetic,
// with 32 vector registers for wider tiles.
#define STRAGGLERSIM_AVX512 __attribute__((target("avx,avx512f,avx512vl")))
#else
#define STRAGGLERSIM_HAVE_AVX_VERSION 0
#endif

namespace stragglersim::models::internal {
namespace {

struct Kernels {
  double (*dot)(const double*, Eigen::Index, const double*);
  void (*update4)(const double*, Eigen::Index, const double*, double*);
  void (*update)(const double*, Eigen::Index, double, double*);
  void (*gram)(const double*, Eigen::Index, Eigen::Index, Eigen::Index, Eigen::Index, double*);
  void (*dot4_many)(
      const double*, Eigen::Index, const double*, Eigen::Index, Eigen::Index, double*);
  void (*update4_many)(
      const double*, Eigen::Index, const double*, Eigen::Index, double*, Eigen::Index);
  std::string_view isa;
  std::string_view many_isa;
};

double baseline_dot(const double* row, Eigen::Index p, const double* x) {
  return body::dot(row, p, x);
}
void baseline_update4(const double* rows, Eigen::Index p, const double* w, double* sum) {
  body::update4(rows, p, w, sum);
}
void baseline_update(const double* row, Eigen::Index p, double w, double* sum) {
  body::update(row, p, w, sum);
}
void baseline_gram(const double* packed,
                   Eigen::Index m,
                   Eigen::Index ld,
                   Eigen::Index j_first,
                   Eigen::Index j_last,
                   double* h) {
  body::gram_columns(packed, m, ld, j_first, j_last, h);
}
void baseline_dot4_many(const double* rows,
                        Eigen::Index p,
                        const double* x,
                        Eigen::Index ldx,
                        Eigen::Index columns,
                        double* z) {
  body::dot4_many<body::kManyColumns>(rows, p, x, ldx, columns, z);
}
void baseline_update4_many(const double* rows,
                           Eigen::Index p,
                           const double* w,
                           Eigen::Index columns,
                           double* sum,
                           Eigen::Index lds) {
  body::update4_many<body::kManyColumns>(rows, p, w, columns, sum, lds);
}

#if STRAGGLERSIM_HAVE_AVX_VERSION
STRAGGLERSIM_AVX double avx_dot(const double* row, Eigen::Index p, const double* x) {
  return body::dot(row, p, x);
}
STRAGGLERSIM_AVX void avx_update4(const double* rows,
                                  Eigen::Index p,
                                  const double* w,
                                  double* sum) {
  body::update4(rows, p, w, sum);
}
STRAGGLERSIM_AVX void avx_update(const double* row, Eigen::Index p, double w, double* sum) {
  body::update(row, p, w, sum);
}
STRAGGLERSIM_AVX void avx_gram(const double* packed,
                               Eigen::Index m,
                               Eigen::Index ld,
                               Eigen::Index j_first,
                               Eigen::Index j_last,
                               double* h) {
  body::gram_columns(packed, m, ld, j_first, j_last, h);
}
STRAGGLERSIM_AVX void avx_dot4_many(const double* rows,
                                    Eigen::Index p,
                                    const double* x,
                                    Eigen::Index ldx,
                                    Eigen::Index columns,
                                    double* z) {
  body::dot4_many<body::kManyColumns, true>(rows, p, x, ldx, columns, z);
}
STRAGGLERSIM_AVX void avx_update4_many(const double* rows,
                                       Eigen::Index p,
                                       const double* w,
                                       Eigen::Index columns,
                                       double* sum,
                                       Eigen::Index lds) {
  body::update4_many<body::kManyColumns>(rows, p, w, columns, sum, lds);
}
STRAGGLERSIM_AVX512 void avx512_dot4_many(const double* rows,
                                          Eigen::Index p,
                                          const double* x,
                                          Eigen::Index ldx,
                                          Eigen::Index columns,
                                          double* z) {
  body::dot4_many<body::kManyColumnsAvx512, true>(rows, p, x, ldx, columns, z);
}
STRAGGLERSIM_AVX512 void avx512_update4_many(const double* rows,
                                             Eigen::Index p,
                                             const double* w,
                                             Eigen::Index columns,
                                             double* sum,
                                             Eigen::Index lds) {
  body::update4_many<body::kManyColumnsAvx512>(rows, p, w, columns, sum, lds);
}
#endif

Kernels choose() {
#if STRAGGLERSIM_HAVE_AVX_VERSION
  __builtin_cpu_init();
  if (__builtin_cpu_supports("avx")) {
    Kernels avx{
        avx_dot, avx_update4, avx_update, avx_gram, avx_dot4_many, avx_update4_many, "avx", "avx"};
    if (__builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512vl")) {
      avx.dot4_many = avx512_dot4_many;
      avx.update4_many = avx512_update4_many;
      avx.many_isa = "avx512";
    }
    return avx;
  }
#endif
  return {baseline_dot,
          baseline_update4,
          baseline_update,
          baseline_gram,
          baseline_dot4_many,
          baseline_update4_many,
          "baseline",
          "baseline"};
}

const Kernels& kernels() {
  static const Kernels chosen = choose();
  return chosen;
}

}  // namespace

double dense_dot(const double* row, Eigen::Index p, const double* x) {
  return kernels().dot(row, p, x);
}

void dense_update4(const double* rows, Eigen::Index p, const double* w, double* sum) {
  kernels().update4(rows, p, w, sum);
}

void dense_update(const double* row, Eigen::Index p, double w, double* sum) {
  kernels().update(row, p, w, sum);
}

void dense_gram_columns(const double* packed,
                        Eigen::Index m,
                        Eigen::Index ld,
                        Eigen::Index j_first,
                        Eigen::Index j_last,
                        double* h) {
  STRAGGLERSIM_ASSERT(ld % kGramBlock == 0 && j_first % kGramBlock == 0 &&
                          j_last % kGramBlock == 0 && 0 <= j_first && j_first <= j_last &&
                          j_last <= ld,
                      "dense_gram_columns needs ld, j_first and j_last multiples of 8 in order");
  kernels().gram(packed, m, ld, j_first, j_last, h);
}

void dense_dot4_many(const double* rows,
                     Eigen::Index p,
                     const double* x,
                     Eigen::Index ldx,
                     Eigen::Index columns,
                     double* z) {
  kernels().dot4_many(rows, p, x, ldx, columns, z);
}

void dense_update4_many(const double* rows,
                        Eigen::Index p,
                        const double* w,
                        Eigen::Index columns,
                        double* sum,
                        Eigen::Index lds) {
  kernels().update4_many(rows, p, w, columns, sum, lds);
}

std::string_view dense_kernel_isa() { return kernels().isa; }

std::string_view dense_many_kernel_isa() { return kernels().many_isa; }

}  // namespace stragglersim::models::internal
