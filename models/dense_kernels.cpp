#include "models/dense_kernels.h"

#include "models/dense_kernels_body.h"

// One clone per instruction set, chosen once when the program is loaded (an ifunc); without x86,
// the single baseline version. The clones are file-local functions behind the declared ones:
// GCC keeps a clone local to the file that defines it, and Clang ignores the attribute on a
// definition whose earlier declaration lacks it, so neither may appear on the header's.
#if defined(__x86_64__) || defined(__i386__)
#define STRAGGLERSIM_CLONES __attribute__((target_clones("avx", "default")))
#else
#define STRAGGLERSIM_CLONES
#endif

namespace stragglersim::models::internal {
namespace {

STRAGGLERSIM_CLONES double cloned_dot(const double* row, Eigen::Index p, const double* x) {
  return body::dot(row, p, x);
}

STRAGGLERSIM_CLONES void cloned_update4(const double* rows,
                                        Eigen::Index p,
                                        const double* w,
                                        double* sum) {
  body::update4(rows, p, w, sum);
}

STRAGGLERSIM_CLONES void cloned_update(const double* row, Eigen::Index p, double w, double* sum) {
  body::update(row, p, w, sum);
}

}  // namespace

double dense_dot(const double* row, Eigen::Index p, const double* x) {
  return cloned_dot(row, p, x);
}

void dense_update4(const double* rows, Eigen::Index p, const double* w, double* sum) {
  cloned_update4(rows, p, w, sum);
}

void dense_update(const double* row, Eigen::Index p, double w, double* sum) {
  cloned_update(row, p, w, sum);
}

std::string_view dense_kernel_isa() {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_cpu_init();
  if (__builtin_cpu_supports("avx")) {
    return "avx";
  }
#endif
  return "baseline";
}

}  // namespace stragglersim::models::internal
