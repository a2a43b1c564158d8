#include "models/sparse_kernels.h"

#include "models/base/invariant.h"
#include "models/sparse_kernels_body.h"

// Each kernel is compiled twice from its body: for the baseline instruction set (two-lane SSE2
// vectors, eight lanes per walk of a row, so that the running sums and weights stay in its
// sixteen registers) and with target("avx") where the compiler targets x86 (four-lane vectors,
// all sixteen lanes in one walk). The version is chosen on first use from the CPU's flags and
// kept in a function-local static, as models/dense_kernels.cpp does.
#if defined(__x86_64__) || defined(__i386__)
#define STRAGGLERSIM_HAVE_AVX_VERSION 1
#define STRAGGLERSIM_AVX __attribute__((target("avx")))
#else
#define STRAGGLERSIM_HAVE_AVX_VERSION 0
#endif

namespace stragglersim::models::internal {
namespace {

namespace body = sparse_body;

struct Kernels {
  void (*margins)(
      const SparseArrays&, Eigen::Index, Eigen::Index, Eigen::Index, const double*, double*);
  void (*updates)(const SparseArrays&,
                  Eigen::Index,
                  Eigen::Index,
                  Eigen::Index,
                  const double*,
                  const unsigned char*,
                  double*);
  std::string_view isa;
};

void baseline_margins(const SparseArrays& a,
                      Eigen::Index first_row,
                      Eigen::Index rows,
                      Eigen::Index width,
                      const double* x,
                      double* z) {
  body::margins_of_width<2, 8>(a, first_row, rows, width, x, z);
}

void baseline_updates(const SparseArrays& a,
                      Eigen::Index first_row,
                      Eigen::Index rows,
                      Eigen::Index width,
                      const double* w,
                      const unsigned char* has_zero,
                      double* sums) {
  body::updates_of_width<2, 8>(a, first_row, rows, width, w, has_zero, sums);
}

#if STRAGGLERSIM_HAVE_AVX_VERSION
STRAGGLERSIM_AVX void avx_margins(const SparseArrays& a,
                                  Eigen::Index first_row,
                                  Eigen::Index rows,
                                  Eigen::Index width,
                                  const double* x,
                                  double* z) {
  body::margins_of_width<4, 16>(a, first_row, rows, width, x, z);
}

STRAGGLERSIM_AVX void avx_updates(const SparseArrays& a,
                                  Eigen::Index first_row,
                                  Eigen::Index rows,
                                  Eigen::Index width,
                                  const double* w,
                                  const unsigned char* has_zero,
                                  double* sums) {
  body::updates_of_width<4, 16>(a, first_row, rows, width, w, has_zero, sums);
}
#endif

Kernels choose() {
#if STRAGGLERSIM_HAVE_AVX_VERSION
  __builtin_cpu_init();
  if (__builtin_cpu_supports("avx")) {
    return {avx_margins, avx_updates, "avx"};
  }
#endif
  return {baseline_margins, baseline_updates, "baseline"};
}

const Kernels& kernels() {
  static const Kernels chosen = choose();
  return chosen;
}

void check_width(Eigen::Index width) {
  STRAGGLERSIM_ASSERT(width > 0 && width <= kSparseWidest && width % kSparseWidthStep == 0,
                      "the sparse kernels take 4, 8, 12 or 16 interleaved columns");
}

}  // namespace

void sparse_margins_rows(const SparseArrays& a,
                         Eigen::Index first_row,
                         Eigen::Index rows,
                         Eigen::Index width,
                         const double* x,
                         double* z) {
  check_width(width);
  kernels().margins(a, first_row, rows, width, x, z);
}

void sparse_updates_rows(const SparseArrays& a,
                         Eigen::Index first_row,
                         Eigen::Index rows,
                         Eigen::Index width,
                         const double* w,
                         const unsigned char* has_zero,
                         double* sums) {
  check_width(width);
  kernels().updates(a, first_row, rows, width, w, has_zero, sums);
}

std::string_view sparse_kernel_isa() { return kernels().isa; }

}  // namespace stragglersim::models::internal
