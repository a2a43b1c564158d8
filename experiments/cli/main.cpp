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
  // Setting those also fixes the size above which a block is mapped fresh (and unmapped when
  // freed) at 128 KiB: every partition gradient, interleaved x and sum buffer of a pass over
  // wide data then faults its pages in again on each pass. Up to glibc's largest, 32 MiB, they
  // come from the heap: the Amazon-like cluster regime sweep (70 runs, --jobs 2) went from 30 to
  // 5 million page faults and from 112 to 81 s (one run at a time: 78 to 70 s).
  constexpr int kLargestHeapBlock = 32 << 20;
  mallopt(M_MMAP_THRESHOLD, kLargestHeapBlock);
#endif
  return stragglersim::experiments::run_cli(std::vector<std::string>(argv, argv + argc));
}
