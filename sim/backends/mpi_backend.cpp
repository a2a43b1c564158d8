#include "sim/backends/mpi_backend.h"

#include <algorithm>
#include <array>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <deque>
#include <limits>
#include <numeric>
#include <stdexcept>
#include <string>
#include <thread>
#include <utility>

#include "models/base/invariant.h"
#include "sim/backends/collective_program.h"

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
constexpr int kNotice = 5;
constexpr int kDone = 6;
constexpr int kAnnounce = 7;
constexpr int kTransfer = 8;
/// Header lengths (doubles) of a work message [t, stamp], a result or notice [t, compute,
/// stamp], a completion report [t, compute, collective, stamp] and a transfer [t, index].
constexpr int kWorkHeader = 2;
constexpr int kResultHeader = 3;
constexpr int kDoneHeader = 4;
constexpr int kTransferHeader = 2;
/// How often an idle master polls its receives: the resolution of its arrival times.
constexpr std::chrono::microseconds kMasterPoll{50};
/// How often an idle worker polls for the next broadcast: its reaction time to a broadcast (the
/// delay itself is measured from the broadcast instant on the master's host).
constexpr std::chrono::microseconds kIdlePoll{50};
/// How often a worker waiting out its delay polls for a newer iteration or the stop.
constexpr std::chrono::microseconds kWorkerPoll{200};
/// How long a worker waiting for a collective's message polls without sleeping (its latency).
constexpr std::chrono::microseconds kCollectiveSpin{2000};

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

/// The communicator of the worker ranks for MPI_Allreduce (a collective of every rank, called
/// once at startup when the run reduces with MPI; MPI_COMM_NULL on the master).
MPI_Comm split_workers(bool wanted) {
  MPI_Comm workers = MPI_COMM_NULL;
  if (wanted) {
    int rank = 0;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_split(MPI_COMM_WORLD, rank == 0 ? MPI_UNDEFINED : 0, rank, &workers);
  }
  return workers;
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

/// The message worker `w` sent with `status` into `b`: a result [t, compute, stamp, y], a notice
/// [t, compute, stamp] or a completion report [t, compute, collective, stamp (, ĝ)].
WorkerMessage message_of(const std::vector<double>& b,
                         const MPI_Status& status,
                         int w,
                         Clock::time_point now,
                         Eigen::Index dimension) {
  WorkerMessage m;
  m.iteration = static_cast<std::uint64_t>(b[0]);
  m.worker = w;
  m.delivered = now;
  if (status.MPI_TAG == kResult) {
    m.y = Eigen::Map<const Eigen::VectorXd>(b.data() + kResultHeader, dimension);
  } else if (status.MPI_TAG == kNotice) {
    m.kind = MessageKind::kNotice;
  } else {
    m.kind = MessageKind::kDone;
    m.compute_seconds = b[1];
    m.collective_seconds = b[2];
    int length = 0;
    MPI_Get_count(&status, MPI_DOUBLE, &length);
    if (length == kDoneHeader + dimension) {
      m.y = Eigen::Map<const Eigen::VectorXd>(b.data() + kDoneHeader, dimension);
    }
  }
  return m;
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
  (void)split_workers(options_.master.collective && options_.mpi_allreduce);
  const auto n = static_cast<std::size_t>(n_);
  impl_->receives.assign(n, MPI_REQUEST_NULL);
  impl_->buffers.assign(n, std::vector<double>(static_cast<std::size_t>(kDoneHeader + dimension)));
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
    const int tag = s.statuses[static_cast<std::size_t>(k)].MPI_TAG;
    const auto iteration = static_cast<std::uint64_t>(b[0]);
    if (!options_.inject && tag != kDone && std::isfinite(b[1])) {
      worker_times_.push_back(WorkerTime{iteration, w, b[1]});
    }
    if (out != nullptr) {
      s.order.emplace_back(b[tag == kDone ? kDoneHeader - 1 : kResultHeader - 1], s.sorted.size());
      s.sorted.push_back(
          message_of(b, s.statuses[static_cast<std::size_t>(k)], w, now, dimension_));
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

void MpiBackend::announce(std::uint64_t iteration, const Eigen::VectorXd& weights) {
  impl_->prune_sends();
  auto& send = impl_->sends.emplace_back();
  send.buffer.resize(static_cast<std::size_t>(1 + weights.size()));
  send.buffer[0] = static_cast<double>(iteration);
  std::copy(weights.data(), weights.data() + weights.size(), send.buffer.begin() + 1);
  send.requests.assign(static_cast<std::size_t>(n_), MPI_REQUEST_NULL);
  for (int i = 0; i < n_; ++i) {
    MPI_Isend(send.buffer.data(),
              static_cast<int>(send.buffer.size()),
              MPI_DOUBLE,
              i + 1,
              kAnnounce,
              MPI_COMM_WORLD,
              &send.requests[static_cast<std::size_t>(i)]);
  }
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
    workers_comm_ = split_workers(options.master.collective && options.mpi_allreduce);
    if (options.master.collective) {
      schedule_ = options.master.collective->schedule;
      STRAGGLERSIM_ASSERT(
          schedule_ != nullptr && schedule_->ranks == n_ && schedule_->elements == d_,
          "a collective's schedule over the workers and the model's dimension");
      program_ = rank_program(*schedule_, worker_);
    }
    post();
  }
  ~MpiWorker() {
    if (workers_comm_ != MPI_COMM_NULL) {
      MPI_Comm_free(&workers_comm_);
    }
  }
  MpiWorker(const MpiWorker&) = delete;
  MpiWorker& operator=(const MpiWorker&) = delete;

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
      if (schedule_ != nullptr) {
        serve_collective(work);
      } else {
        serve(work);
      }
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
      if (status.MPI_TAG == kAnnounce) {
        announced_ = static_cast<std::uint64_t>(buffer_[0]);
        announced_weight_ = buffer_[static_cast<std::size_t>(1 + worker_)];
        announced_at_ = now;
      } else {
        take_work(now);
      }
      post();
    }
  }

  /// The work message in buffer_ joins the queue (cancel and drain: it replaces it).
  void take_work(Clock::time_point now) {
    if (!finish_) {
      queue_.clear();
    }
    Work w;
    w.iteration = static_cast<std::uint64_t>(buffer_[0]);
    w.start = shared_clock_ ? std::min(now, time_of(buffer_[1])) : now;
    w.x = Eigen::Map<const Eigen::VectorXd>(buffer_.data() + kWorkHeader, d_);
    w.delay = buffer_[static_cast<std::size_t>(kWorkHeader + d_ + worker_)];
    queue_.push_back(std::move(w));
  }

  /// Whether the work in hand must be abandoned: the stop, or (cancel, drain) a newer iteration,
  /// or a collective's announcement of the iteration in hand.
  bool superseded() {
    pump();
    return stop_ || (!finish_ && !queue_.empty()) || (serving_ != 0 && announced_ == serving_);
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

  /// One iteration's transfers of this rank, point-to-point between worker ranks: every
  /// transfer from a source to a destination travels in schedule order with one tag, and MPI
  /// keeps the order of messages between two ranks, so each receive matches its transfer.
  class Channel final : public TransferChannel {
   public:
    Channel(MpiWorker& worker, std::uint64_t iteration) : w_(worker), iteration_(iteration) {}
    void send(std::size_t index, std::span<const double> payload) override {
      Pending& p = sends_.emplace_back();
      p.buffer.resize(static_cast<std::size_t>(kTransferHeader) + payload.size());
      p.buffer[0] = static_cast<double>(iteration_);
      p.buffer[1] = static_cast<double>(index);
      std::copy(payload.begin(), payload.end(), p.buffer.begin() + kTransferHeader);
      MPI_Isend(p.buffer.data(),
                static_cast<int>(p.buffer.size()),
                MPI_DOUBLE,
                w_.schedule_->transfers[index].destination + 1,
                kTransfer,
                MPI_COMM_WORLD,
                &p.request);
      // Completed by flush (MPI_Test in await), which the analyzer cannot follow.
      // NOLINTNEXTLINE(clang-analyzer-optin.mpi.MPI-Checker)
    }
    // The receive is completed by MPI_Test in await, or cancelled and waited, which the analyzer
    // cannot follow.
    // NOLINTBEGIN(clang-analyzer-optin.mpi.MPI-Checker)
    bool receive(std::size_t index, std::span<double> payload) override {
      inbox_.resize(static_cast<std::size_t>(kTransferHeader) + payload.size());
      MPI_Request request = MPI_REQUEST_NULL;
      MPI_Irecv(inbox_.data(),
                static_cast<int>(inbox_.size()),
                MPI_DOUBLE,
                w_.schedule_->transfers[index].source + 1,
                kTransfer,
                MPI_COMM_WORLD,
                &request);
      if (!w_.await(request)) {
        MPI_Cancel(&request);
        MPI_Wait(&request, MPI_STATUS_IGNORE);
        return false;
      }
      STRAGGLERSIM_ASSERT(
          inbox_[0] == static_cast<double>(iteration_) && inbox_[1] == static_cast<double>(index),
          "transfers between two ranks arrive in schedule order");
      std::copy(inbox_.begin() + kTransferHeader, inbox_.end(), payload.begin());
      return true;
    }
    // NOLINTEND(clang-analyzer-optin.mpi.MPI-Checker)
    /// Waits until every send completed; false when the run stops first.
    bool flush() {
      return std::all_of(
          sends_.begin(), sends_.end(), [&](Pending& p) { return w_.await(p.request); });
    }

   private:
    struct Pending {
      std::vector<double> buffer;
      MPI_Request request = MPI_REQUEST_NULL;
    };
    MpiWorker& w_;
    std::uint64_t iteration_;
    std::deque<Pending> sends_;  // a deque: the buffers stay put while their sends run
    std::vector<double> inbox_;
  };

  /// Polls `request` (and the master's messages) until it completes: true, or the stop: false.
  /// It yields for the first kCollectiveSpin, then sleeps kIdlePoll between polls.
  bool await(MPI_Request& request) {
    const Clock::time_point spin_until = Clock::now() + kCollectiveSpin;
    while (true) {
      int flag = 0;
      MPI_Test(&request, &flag, MPI_STATUS_IGNORE);
      if (flag != 0) {
        return true;
      }
      pump();
      if (stop_) {
        return false;
      }
      if (Clock::now() < spin_until) {
        std::this_thread::yield();
      } else {
        std::this_thread::sleep_for(kIdlePoll);
      }
    }
  }

  /// y = Σ_s B_is ∇F_s(x) and the injected wait; false when superseded first.
  bool compute_message(const Work& work, Eigen::Map<Eigen::VectorXd>& y) {
    y.setZero();
    for (std::size_t s = 0; s < support_.size(); ++s) {
      if (superseded()) {
        return false;
      }
      objective_.partition_gradient(support_[s], work.x, partition_);
      y.noalias() += values_[s] * partition_;
    }
    return !options_.inject ||
           wait_until(work.start + real_duration(work.delay * options_.master.seconds_per_unit));
  }

  /// The collective's data movement on v: the schedule, or MPI_Allreduce; false when stopped.
  bool reduce(std::uint64_t iteration, Eigen::VectorXd& v) {
    if (workers_comm_ != MPI_COMM_NULL) {
      MPI_Request request = MPI_REQUEST_NULL;
      MPI_Iallreduce(MPI_IN_PLACE,
                     v.data(),
                     static_cast<int>(d_),
                     MPI_DOUBLE,
                     MPI_SUM,
                     workers_comm_,
                     &request);
      // Completed by MPI_Test in await, which the analyzer cannot follow.
      // NOLINTNEXTLINE(clang-analyzer-optin.mpi.MPI-Checker)
      return await(request);
    }
    Channel channel(*this, iteration);
    return run_program(*schedule_, program_, v, channel, scratch_) && channel.flush();
  }

  /// One collective iteration: compute, notice, the announcement, the reduction, the report.
  void serve_collective(const Work& work) {
    serving_ = work.iteration;
    const Clock::time_point began = Clock::now();
    Eigen::Map<Eigen::VectorXd> y(result_.data() + kResultHeader, d_);
    const bool noticed = compute_message(work, y);
    Clock::time_point ready = Clock::now();
    if (noticed) {
      const std::array<double, kResultHeader> notice = {
          static_cast<double>(work.iteration),
          std::chrono::duration<double>(ready - began).count(),
          stamp_of(ready)};
      MPI_Send(notice.data(), kResultHeader, MPI_DOUBLE, 0, kNotice, MPI_COMM_WORLD);
    }
    while (announced_ != work.iteration && !stop_) {
      std::this_thread::sleep_for(kIdlePoll);
      pump();
    }
    serving_ = 0;
    if (stop_) {
      return;
    }
    if (!noticed) {
      ready = std::min(ready, announced_at_);  // abandoned: it joins at the stop
    }
    Eigen::VectorXd v = contribution(announced_weight_, y, d_);
    if (!reduce(work.iteration, v)) {
      return;
    }
    const Clock::time_point end = Clock::now();
    std::vector<double> report(static_cast<std::size_t>(kDoneHeader + (worker_ == 0 ? d_ : 0)));
    report[0] = static_cast<double>(work.iteration);
    report[1] = noticed ? std::chrono::duration<double>(ready - work.start).count()
                        : std::numeric_limits<double>::quiet_NaN();
    report[2] = std::chrono::duration<double>(end - ready).count();
    report[3] = stamp_of(end);
    std::copy(v.data(), v.data() + (worker_ == 0 ? d_ : 0), report.begin() + kDoneHeader);
    MPI_Send(report.data(), static_cast<int>(report.size()), MPI_DOUBLE, 0, kDone, MPI_COMM_WORLD);
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
  // Collectives.
  MPI_Comm workers_comm_ = MPI_COMM_NULL;  // the worker ranks (allreduce mpi)
  std::shared_ptr<const collectives::Schedule> schedule_;
  std::vector<RankStep> program_;
  std::vector<double> scratch_;
  std::uint64_t serving_ = 0;    // the collective iteration in hand (0: none)
  std::uint64_t announced_ = 0;  // the latest announcement's iteration
  double announced_weight_ = 0.0;
  Clock::time_point announced_at_{};
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
