#include "sim/backends/mpi_backend.h"

#include <algorithm>
#include <array>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <deque>
#include <numeric>
#include <stdexcept>
#include <string>
#include <thread>
#include <utility>

#include "models/base/invariant.h"

#ifdef STRAGGLERSIM_HAVE_MPI
#include <mpi.h>
#endif

namespace stragglersim::sim {

#ifdef STRAGGLERSIM_HAVE_MPI
namespace {

using Clock = std::chrono::steady_clock;

constexpr int kWork = 1;
constexpr int kStop = 2;
constexpr int kResult = 3;
constexpr int kBye = 4;
/// Header lengths (doubles) of a work message [t, stamp] and a result [t, compute, stamp].
constexpr int kWorkHeader = 2;
constexpr int kResultHeader = 3;
/// How often an idle master polls its receives: the resolution of its arrival times.
constexpr std::chrono::microseconds kMasterPoll{50};
/// How often an idle worker polls for the next broadcast: its reaction time to a broadcast (the
/// delay itself is measured from the broadcast instant on the master's host).
constexpr std::chrono::microseconds kIdlePoll{50};
/// How often a worker waiting out its delay polls for a newer iteration or the stop.
constexpr std::chrono::microseconds kWorkerPoll{200};

double stamp_of(Clock::time_point t) {
  return std::chrono::duration<double>(t.time_since_epoch()).count();
}

Clock::time_point time_of(double stamp) {
  return Clock::time_point(
      std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(stamp)));
}

int world_size() {
  int size = 0;
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  return size;
}

/// Whether this rank runs on the master's host, where the steady clocks are one clock (a
/// collective: every rank calls it once at startup).
bool shares_master_clock() {
  std::array<char, MPI_MAX_PROCESSOR_NAME> name{};
  int length = 0;
  MPI_Get_processor_name(name.data(), &length);
  std::array<char, MPI_MAX_PROCESSOR_NAME> master = name;
  MPI_Bcast(master.data(), MPI_MAX_PROCESSOR_NAME, MPI_CHAR, 0, MPI_COMM_WORLD);
  return std::string(name.data()) == std::string(master.data());
}

}  // namespace

struct MpiBackend::Impl {
  struct PendingSend {
    std::vector<double> buffer;
    std::vector<MPI_Request> requests;
  };
  std::vector<MPI_Request> receives;  // one per worker; MPI_REQUEST_NULL after its bye
  std::vector<std::vector<double>> buffers;
  std::deque<PendingSend> sends;  // broadcasts not yet received by every worker
  std::vector<int> indices;
  std::vector<MPI_Status> statuses;
  std::vector<std::pair<double, std::size_t>> order;
  std::vector<WorkerMessage> sorted;
  int byes = 0;

  void post(int worker) {
    auto& b = buffers[static_cast<std::size_t>(worker)];
    MPI_Irecv(b.data(),
              static_cast<int>(b.size()),
              MPI_DOUBLE,
              worker + 1,
              MPI_ANY_TAG,
              MPI_COMM_WORLD,
              &receives[static_cast<std::size_t>(worker)]);
  }

  void prune_sends() {
    while (!sends.empty()) {
      int done = 0;
      auto& r = sends.front().requests;
      MPI_Testall(static_cast<int>(r.size()), r.data(), &done, MPI_STATUSES_IGNORE);
      if (done == 0) {
        return;
      }
      sends.pop_front();
    }
  }
};

MpiBackend::MpiBackend(Scheme scheme,
                       Eigen::Index dimension,
                       std::unique_ptr<DelayModel> delays,
                       std::uint64_t seed,
                       MpiOptions options)
    : options_(std::move(options)),
      dimension_(dimension),
      n_(scheme.code != nullptr ? scheme.code->workers() : 0),
      master_(std::move(scheme), dimension, std::move(delays), seed, options_.master),
      impl_(std::make_unique<Impl>()) {
  int initialised = 0;
  MPI_Initialized(&initialised);
  STRAGGLERSIM_ASSERT(initialised != 0, "the MPI backend needs an MPI session");
  STRAGGLERSIM_ASSERT(world_size() == n_ + 1, "the MPI world must hold the master and n workers");
  (void)shares_master_clock();
  const auto n = static_cast<std::size_t>(n_);
  impl_->receives.assign(n, MPI_REQUEST_NULL);
  impl_->buffers.assign(n,
                        std::vector<double>(static_cast<std::size_t>(kResultHeader + dimension)));
  impl_->indices.resize(n);
  impl_->statuses.resize(n);
  for (int i = 0; i < n_; ++i) {
    impl_->post(i);
  }
}

MpiBackend::~MpiBackend() {
  shutdown();
  if (unresponsive_ > 0) {
    std::fprintf(stderr,
                 "error: %d of %d MPI workers did not stop; aborting the MPI job\n",
                 unresponsive_,
                 n_);
    MPI_Abort(MPI_COMM_WORLD, 3);  // last resort: a rank that no longer answers
  }
}

BackendIteration MpiBackend::iterate(std::uint64_t iteration,
                                     const Eigen::VectorXd& query,
                                     const Eigen::MatrixXd* /*partition_gradients*/) {
  return master_.iterate(iteration, query, *this);
}

MasterTransport::Clock::time_point MpiBackend::broadcast(std::uint64_t iteration,
                                                         const Eigen::VectorXd& x,
                                                         std::span<const double> delays) {
  impl_->prune_sends();
  auto& send = impl_->sends.emplace_back();
  send.buffer.resize(static_cast<std::size_t>(kWorkHeader + dimension_) + delays.size());
  send.buffer[0] = static_cast<double>(iteration);
  std::copy(x.data(), x.data() + x.size(), send.buffer.begin() + kWorkHeader);
  std::copy(delays.begin(), delays.end(), send.buffer.begin() + kWorkHeader + dimension_);
  send.requests.assign(static_cast<std::size_t>(n_), MPI_REQUEST_NULL);
  const Clock::time_point start = Clock::now();
  send.buffer[1] = stamp_of(start);
  for (int i = 0; i < n_; ++i) {
    MPI_Isend(send.buffer.data(),
              static_cast<int>(send.buffer.size()),
              MPI_DOUBLE,
              i + 1,
              kWork,
              MPI_COMM_WORLD,
              &send.requests[static_cast<std::size_t>(i)]);
  }
  return start;
}

std::size_t MpiBackend::poll(std::vector<WorkerMessage>* out) {
  Impl& s = *impl_;
  int count = 0;
  MPI_Testsome(n_, s.receives.data(), &count, s.indices.data(), s.statuses.data());
  if (count == MPI_UNDEFINED || count == 0) {
    return 0;
  }
  const Clock::time_point now = Clock::now();
  s.order.clear();
  s.sorted.clear();
  for (int k = 0; k < count; ++k) {
    const int w = s.indices[static_cast<std::size_t>(k)];
    if (s.statuses[static_cast<std::size_t>(k)].MPI_TAG == kBye) {
      ++s.byes;  // the worker's last message: its receive stays MPI_REQUEST_NULL
      continue;
    }
    const std::vector<double>& b = s.buffers[static_cast<std::size_t>(w)];
    const auto iteration = static_cast<std::uint64_t>(b[0]);
    if (!options_.inject) {
      worker_times_.push_back(WorkerTime{iteration, w, b[1]});
    }
    if (out != nullptr) {
      s.order.emplace_back(b[2], s.sorted.size());
      s.sorted.push_back(
          WorkerMessage{iteration,
                        w,
                        now,
                        Eigen::Map<const Eigen::VectorXd>(b.data() + kResultHeader, dimension_)});
    }
    s.post(w);
  }
  // One poll can complete several results: their order is the workers' send stamps.
  std::sort(s.order.begin(), s.order.end());
  for (const auto& [stamp, index] : s.order) {
    out->push_back(std::move(s.sorted[index]));
  }
  return s.order.size();
}

void MpiBackend::receive(Clock::time_point wake, std::vector<WorkerMessage>& out) {
  while (poll(&out) == 0) {
    const Clock::time_point now = Clock::now();
    if (now >= wake) {
      return;
    }
    std::this_thread::sleep_for(std::min<Clock::duration>(kMasterPoll, wake - now));
  }
}

void MpiBackend::shutdown() {
  if (shut_down_) {
    return;
  }
  shut_down_ = true;
  double stop = 0.0;
  std::vector<MPI_Request> stops(static_cast<std::size_t>(n_), MPI_REQUEST_NULL);
  for (int i = 0; i < n_; ++i) {
    MPI_Isend(
        &stop, 1, MPI_DOUBLE, i + 1, kStop, MPI_COMM_WORLD, &stops[static_cast<std::size_t>(i)]);
  }
  // Results still in flight are received and discarded until every worker's bye.
  const Clock::time_point give_up =
      Clock::now() + real_duration(std::max(options_.master.timeout, 10.0));
  while (impl_->byes < n_) {
    if (poll(nullptr) == 0) {
      if (Clock::now() > give_up) {
        // Their sends would never complete: the destructor aborts the job, once the run's
        // files are written.
        unresponsive_ = n_ - impl_->byes;
        return;
      }
      std::this_thread::sleep_for(kMasterPoll);
    }
  }
  for (auto& send : impl_->sends) {
    MPI_Waitall(static_cast<int>(send.requests.size()), send.requests.data(), MPI_STATUSES_IGNORE);
  }
  impl_->sends.clear();
  MPI_Waitall(n_, stops.data(), MPI_STATUSES_IGNORE);
}

namespace {

/// One worker rank: its receive of the master's messages and its own work queue.
class MpiWorker {
 public:
  MpiWorker(const models::Objective& objective,
            const Scheme& scheme,
            const MpiOptions& options,
            int worker)
      : objective_(objective),
        options_(options),
        worker_(worker),
        d_(objective.dimension()),
        n_(scheme.code->workers()),
        support_(scheme.code->support(worker)),
        values_(scheme.code->support_values(worker)),
        finish_(options.master.policy == StragglerPolicy::kFinish),
        buffer_(static_cast<std::size_t>(kWorkHeader + d_ + n_)),
        result_(static_cast<std::size_t>(kResultHeader + d_)),
        partition_(d_) {
    shared_clock_ = shares_master_clock();
    post();
  }

  void run() {
    while (true) {
      pump();
      while (queue_.empty() && !stop_) {
        std::this_thread::sleep_for(kIdlePoll);
        pump();
      }
      if (stop_) {
        break;
      }
      Work work = std::move(queue_.front());
      queue_.pop_front();
      serve(work);
    }
    double bye = 0.0;
    MPI_Send(&bye, 1, MPI_DOUBLE, 0, kBye, MPI_COMM_WORLD);
  }

 private:
  struct Work {
    std::uint64_t iteration = 0;
    Clock::time_point start;  // the broadcast (shared clock) or its receipt
    Eigen::VectorXd x;
    double delay = 0.0;
  };

  void post() {
    // Posted only at start-up and after MPI_Test completed the previous receive (pump), which
    // the analyzer cannot follow through the flag.
    // NOLINTNEXTLINE(clang-analyzer-optin.mpi.MPI-Checker)
    MPI_Irecv(buffer_.data(),
              static_cast<int>(buffer_.size()),
              MPI_DOUBLE,
              0,
              MPI_ANY_TAG,
              MPI_COMM_WORLD,
              &request_);
  }

  /// Takes every message that arrived: cancel and drain keep only the newest broadcast.
  void pump() {
    while (!stop_) {
      int flag = 0;
      MPI_Status status;
      MPI_Test(&request_, &flag, &status);
      if (flag == 0) {
        return;
      }
      if (status.MPI_TAG == kStop) {
        stop_ = true;  // the master's last message: no receive is posted any more
        return;
      }
      const Clock::time_point now = Clock::now();
      if (!finish_) {
        queue_.clear();
      }
      Work w;
      w.iteration = static_cast<std::uint64_t>(buffer_[0]);
      w.start = shared_clock_ ? std::min(now, time_of(buffer_[1])) : now;
      w.x = Eigen::Map<const Eigen::VectorXd>(buffer_.data() + kWorkHeader, d_);
      w.delay = buffer_[static_cast<std::size_t>(kWorkHeader + d_ + worker_)];
      queue_.push_back(std::move(w));
      post();
    }
  }

  /// Whether the work in hand must be abandoned: the stop, or (cancel, drain) a newer iteration.
  bool superseded() {
    pump();
    return stop_ || (!finish_ && !queue_.empty());
  }

  [[nodiscard]] const WorkerFault* fault_of(std::uint64_t iteration) const {
    for (const auto& f : options_.master.faults) {
      if (f.worker == worker_ && iteration >= f.from_iteration) {
        return &f;
      }
    }
    return nullptr;
  }

  /// Waits until `target`; false when superseded first.
  bool wait_until(Clock::time_point target) {
    while (true) {
      const Clock::time_point now = Clock::now();
      if (now >= target) {
        return true;
      }
      if (superseded()) {
        return false;
      }
      const Clock::duration left = target - now;
      if (left > kSpinWindow) {
        std::this_thread::sleep_for(std::min<Clock::duration>(left - kSpinWindow, kWorkerPoll));
      } else {
        std::this_thread::yield();
      }
    }
  }

  void serve(const Work& work) {
    const WorkerFault* fault = fault_of(work.iteration);
    if (fault != nullptr && fault->kind == FaultKind::kCrash) {
      return;  // never answers; keeps receiving so that the shutdown finds it
    }
    const Clock::time_point began = Clock::now();
    Eigen::Map<Eigen::VectorXd> y(result_.data() + kResultHeader, d_);
    y.setZero();
    for (std::size_t s = 0; s < support_.size(); ++s) {
      if (!finish_ && superseded()) {
        return;  // abandoned between partitions
      }
      objective_.partition_gradient(support_[s], work.x, partition_);
      y.noalias() += values_[s] * partition_;
    }
    Clock::time_point computed = Clock::now();
    if ((fault != nullptr && fault->kind == FaultKind::kHang) || !std::isfinite(work.delay)) {
      return;  // hangs: never answers, moves on with the next broadcast or the stop
    }
    if (fault != nullptr && fault->kind == FaultKind::kSlow && !options_.inject) {
      // No injected delay to scale (the master scales T_i otherwise): the compute time itself
      // is stretched to factor times what it took.
      const Clock::time_point stretched =
          computed + real_duration((fault->factor - 1.0) *
                                   std::chrono::duration<double>(computed - began).count());
      if (!wait_until(stretched)) {
        return;
      }
      computed = stretched;
    }
    if (options_.inject) {
      const Clock::time_point start = finish_ ? std::max(work.start, free_at_) : work.start;
      if (!wait_until(start + real_duration(work.delay * options_.master.seconds_per_unit))) {
        return;
      }
    }
    const Clock::time_point sent = Clock::now();
    result_[0] = static_cast<double>(work.iteration);
    result_[1] = std::chrono::duration<double>(computed - began).count();
    result_[2] = stamp_of(sent);
    MPI_Send(
        result_.data(), static_cast<int>(result_.size()), MPI_DOUBLE, 0, kResult, MPI_COMM_WORLD);
    free_at_ = sent;
  }

  const models::Objective& objective_;
  const MpiOptions& options_;
  int worker_ = 0;
  Eigen::Index d_ = 0;
  int n_ = 0;
  std::span<const int> support_;
  std::span<const double> values_;
  bool finish_ = false;
  bool shared_clock_ = false;
  std::vector<double> buffer_;
  std::vector<double> result_;
  Eigen::VectorXd partition_;
  MPI_Request request_ = MPI_REQUEST_NULL;
  std::deque<Work> queue_;
  bool stop_ = false;
  Clock::time_point free_at_{};
};

}  // namespace

void run_mpi_worker(const models::Objective& objective,
                    const Scheme& scheme,
                    const MpiOptions& options,
                    int worker) {
  STRAGGLERSIM_ASSERT(scheme.code != nullptr && worker >= 0 && worker < scheme.code->workers(),
                      "an MPI worker needs a code and its worker index");
  STRAGGLERSIM_ASSERT(world_size() == scheme.code->workers() + 1,
                      "the MPI world must hold the master and n workers");
  tighten_timer_slack();
  MpiWorker(objective, scheme, options, worker).run();
  // The worker's receive is tested until the master's stop message completes it (pump); the
  // analyzer, which does not follow MPI_Test's flag, reports it unwaited at the scope's end.
  // NOLINTNEXTLINE(clang-analyzer-optin.mpi.MPI-Checker)
}

#else  // Without MPI: every entry point is an internal error (callers check mpi_compiled_in()).

namespace {
[[noreturn]] void not_compiled_in() {
  throw std::logic_error("internal error: the MPI backend is not compiled in");
}
}  // namespace

struct MpiBackend::Impl {};

MpiBackend::MpiBackend(Scheme scheme,
                       Eigen::Index dimension,
                       std::unique_ptr<DelayModel> delays,
                       std::uint64_t seed,
                       MpiOptions options)
    : options_(std::move(options)),
      dimension_(dimension),
      master_(std::move(scheme), dimension, std::move(delays), seed, options_.master) {
  not_compiled_in();
}
MpiBackend::~MpiBackend() = default;
BackendIteration MpiBackend::iterate(std::uint64_t /*iteration*/,
                                     const Eigen::VectorXd& /*query*/,
                                     const Eigen::MatrixXd* /*partition_gradients*/) {
  not_compiled_in();
}
MasterTransport::Clock::time_point MpiBackend::broadcast(std::uint64_t /*iteration*/,
                                                         const Eigen::VectorXd& /*x*/,
                                                         std::span<const double> /*delays*/) {
  not_compiled_in();
}
void MpiBackend::receive(Clock::time_point /*wake*/, std::vector<WorkerMessage>& /*out*/) {
  not_compiled_in();
}
std::size_t MpiBackend::poll(std::vector<WorkerMessage>* /*out*/) { not_compiled_in(); }
void MpiBackend::shutdown() {}
void run_mpi_worker(const models::Objective& /*objective*/,
                    const Scheme& /*scheme*/,
                    const MpiOptions& /*options*/,
                    int /*worker*/) {
  not_compiled_in();
}

#endif

}  // namespace stragglersim::sim
