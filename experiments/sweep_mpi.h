#pragma once
// Sweeps over MPI ranks (`mpirun -np P stragglersim sweep S --out DIR`), on a file system that
// every rank sees. Rank 0 checks the folder, then hands out runs dynamically, the largest
// expected cost first (SweepRun::cost), to the ranks as they become free and to one worker
// thread of its own; every rank writes the runs it is given, and rank 0 writes index.csv. The
// output is byte-identical to `sweep --jobs 1`, and resumable the same way: each run is planned
// and written by exactly one rank, and a run is skipped when its summary.json exists.

#include <filesystem>

#include "experiments/sweep.h"

namespace stragglersim::experiments {

/// Thrown on ranks other than 0 when rank 0 has reported an error or an interruption: the rank
/// ends with `status` and prints nothing (rank 0 prints the message).
struct RankStop {
  int status = 0;
};

/// Runs `spec` over the ranks of MPI_COMM_WORLD (the caller holds an MpiSession); every rank
/// calls it. On rank 0: the same result and exceptions as run_sweep (progress called on rank 0
/// only). On other ranks: an empty result, or RankStop. Threads-backend runs are refused when
/// `size` > 1 (ConfigError): ranks may share a machine's cores.
SweepResult run_sweep_mpi(const SweepSpec& spec,
                          const std::filesystem::path& out_dir,
                          const SweepOptions& options,
                          int rank,
                          int size);

}  // namespace stragglersim::experiments
