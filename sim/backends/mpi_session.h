#pragma once
// The MPI session of one process (Open MPI, an optional build dependency). The MPI backend
// (`run` under mpirun) and MPI sweeps (`sweep` under mpirun) share it: MPI is initialised once
// per process, by the first MpiSession, and finalised when that session ends.

#include <chrono>
#include <optional>

namespace stragglersim::sim {

/// Whether the program was built with Open MPI (CMake option STRAGGLERSIM_WITH_MPI and the
/// library found).
[[nodiscard]] bool mpi_compiled_in();

/// Whether this process was started by mpirun / mpiexec (the launcher's environment variables:
/// OMPI_COMM_WORLD_SIZE for Open MPI, PMI_SIZE or PMIX_RANK for other launchers).
[[nodiscard]] bool launched_by_mpi();

/// This process's rank as its launcher's environment says (OMPI_COMM_WORLD_RANK, PMIX_RANK or
/// PMI_RANK), before MPI is initialised; nullopt when not launched by mpirun or unreadable.
[[nodiscard]] std::optional<int> launcher_rank();

/// RAII MPI_Init_thread(MPI_THREAD_FUNNELED) / MPI_Finalize. Constructing one without MPI
/// compiled in is an internal error (callers check mpi_compiled_in() first and report it).
class MpiSession {
 public:
  MpiSession();
  ~MpiSession();
  MpiSession(const MpiSession&) = delete;
  MpiSession& operator=(const MpiSession&) = delete;

  /// Rank in MPI_COMM_WORLD and its size.
  [[nodiscard]] int rank() const { return rank_; }
  [[nodiscard]] int size() const { return size_; }

  /// Waits until every rank has called meet(), or `limit` has passed; returns whether they all
  /// met. A rank that stops early calls it after saying why: mpirun ends the whole job on the
  /// first non-zero exit, which would otherwise cut off rank 0's message. After a timeout the
  /// session does not call MPI_Finalize (its barrier is still pending); the exit status says
  /// the job failed.
  bool meet(std::chrono::milliseconds limit);

 private:
  bool owns_ = false;
  bool abandoned_ = false;
  int rank_ = 0;
  int size_ = 1;
};

}  // namespace stragglersim::sim
