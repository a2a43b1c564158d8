#include "sim/backends/mpi_session.h"

#include <charconv>
#include <cstdlib>
#include <string_view>
#include <system_error>
#include <thread>

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

std::optional<int> launcher_rank() {
  for (const char* name : {"OMPI_COMM_WORLD_RANK", "PMIX_RANK", "PMI_RANK"}) {
    const char* value = std::getenv(name);
    if (value == nullptr) {
      continue;
    }
    int rank = -1;
    const std::string_view text(value);
    const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), rank);
    if (error == std::errc() && end == text.data() + text.size() && rank >= 0) {
      return rank;
    }
    return std::nullopt;
  }
  return std::nullopt;
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

bool MpiSession::meet(std::chrono::milliseconds limit) {
  MPI_Request request = MPI_REQUEST_NULL;
  MPI_Ibarrier(MPI_COMM_WORLD, &request);
  const auto deadline = std::chrono::steady_clock::now() + limit;
  for (;;) {
    int done = 0;
    MPI_Test(&request, &done, MPI_STATUS_IGNORE);
    if (done != 0) {
      return true;
    }
    if (std::chrono::steady_clock::now() >= deadline) {
      abandoned_ = true;
      return false;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
}

MpiSession::~MpiSession() {
  if (owns_ && !abandoned_) {
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
bool MpiSession::meet(std::chrono::milliseconds /*limit*/) { return !abandoned_; }
#endif

}  // namespace stragglersim::sim
