#include "sim/mpi_session.h"

#include <cstdlib>

#include "models/base/invariant.h"

#ifdef STRAGGLERSIM_HAVE_MPI
#include <mpi.h>
#endif

namespace stragglersim::sim {

bool mpi_compiled_in() {
#ifdef STRAGGLERSIM_HAVE_MPI
  return true;
#else
  return false;
#endif
}

bool launched_by_mpi() {
  return std::getenv("OMPI_COMM_WORLD_SIZE") != nullptr || std::getenv("PMI_SIZE") != nullptr ||
         std::getenv("PMIX_RANK") != nullptr;
}

#ifdef STRAGGLERSIM_HAVE_MPI
MpiSession::MpiSession() {
  int initialised = 0;
  MPI_Initialized(&initialised);
  if (initialised == 0) {
    int provided = 0;
    MPI_Init_thread(nullptr, nullptr, MPI_THREAD_FUNNELED, &provided);
    owns_ = true;
  }
  MPI_Comm_rank(MPI_COMM_WORLD, &rank_);
  MPI_Comm_size(MPI_COMM_WORLD, &size_);
}

MpiSession::~MpiSession() {
  if (owns_) {
    int finalised = 0;
    MPI_Finalized(&finalised);
    if (finalised == 0) {
      MPI_Finalize();
    }
  }
}
#else
MpiSession::MpiSession() { STRAGGLERSIM_ASSERT(false, "MPI is not compiled in"); }
MpiSession::~MpiSession() = default;
#endif

}  // namespace stragglersim::sim
