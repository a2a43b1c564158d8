// stragglersim: the command line. All the work is in experiments/cli/cli.cpp.

#include <string>
#include <vector>

// After a standard header, which defines __GLIBC__ on glibc.
#ifdef __GLIBC__
#include <malloc.h>
#endif

#include "experiments/cli/cli.h"

int main(int argc, char** argv) {
#ifdef __GLIBC__
  // glibc's default heap returns every freed top chunk above 128 KiB to the kernel and grows by
  // the same few pages again, so runs that allocate and free buffers per simulated run or
  // iteration fault the same pages in over and over: `advise --fit` on 16 heterogeneous workers
  // spent 26 of its 69 s in the kernel. Growing and trimming in 256 MiB steps (address space,
  // not resident memory, until touched) takes it to 20 s with the same output.
  constexpr int kHeapStep = 256 << 20;
  mallopt(M_TOP_PAD, kHeapStep);
  mallopt(M_TRIM_THRESHOLD, kHeapStep);
#endif
  return stragglersim::experiments::run_cli(std::vector<std::string>(argv, argv + argc));
}
