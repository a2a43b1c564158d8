#include "sim/threaded_backend.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <string>
#include <utility>

#include "models/base/invariant.h"

#ifdef __linux__
#include <sys/prctl.h>
#endif

namespace stragglersim::sim {
namespace {

constexpr double kInfinity = std::numeric_limits<double>::infinity();
/// Longest wait ever scheduled (real seconds); keeps time_point arithmetic far from overflow.
constexpr double kLongestWait = 1.0e6;
/// The last stretch before a delivery target that a worker spins (yielding) instead of sleeping.
constexpr std::chrono::microseconds kSpinWindow{100};

/// The default 50 µs timer slack of Linux threads would add its own jitter to every injected
/// delay; 1 ns makes wait_until wake as close to the target as the scheduler allows.
void tighten_timer_slack() {
#ifdef __linux__
  (void)::prctl(PR_SET_TIMERSLACK, 1UL, 0UL, 0UL, 0UL);
#endif
}

std::chrono::steady_clock::duration real_duration(double seconds) {
  return std::chrono::duration_cast<std::chrono::steady_clock::duration>(
      std::chrono::duration<double>(std::clamp(seconds, 0.0, kLongestWait)));
}

double seconds_between(std::chrono::steady_clock::time_point from,
                       std::chrono::steady_clock::time_point to) {
  return std::chrono::duration<double>(to - from).count();
}

/// The run's delay model with faulty workers' delays replaced by +inf from their first faulty
/// iteration: the inner model still draws every worker, so the stream is consumed exactly as in
/// a fault-free run.
class FaultyDelay final : public DelayModel {
 public:
  FaultyDelay(std::unique_ptr<DelayModel> inner, std::vector<WorkerFault> faults)
      : inner_(std::move(inner)), faults_(std::move(faults)) {}
  [[nodiscard]] std::string name() const override { return inner_->name(); }
  [[nodiscard]] int workers() const override { return inner_->workers(); }
  void sample(std::uint64_t iteration, RandomEngine& rng, std::span<double> out) override {
    inner_->sample(iteration, rng, out);
    for (const auto& f : faults_) {
      if (iteration >= f.from_iteration) {
        out[static_cast<std::size_t>(f.worker)] = kInfinity;
      }
    }
  }
  [[nodiscard]] double cdf(int worker, double t) const override { return inner_->cdf(worker, t); }
  [[nodiscard]] double mean(int worker) const override { return inner_->mean(worker); }
  [[nodiscard]] double variance(int worker) const override { return inner_->variance(worker); }
  [[nodiscard]] double lower_bound(int worker) const override {
    return inner_->lower_bound(worker);
  }

 private:
  std::unique_ptr<DelayModel> inner_;
  std::vector<WorkerFault> faults_;
};

bool same_set(std::vector<int> a, std::vector<int> b) {
  std::sort(a.begin(), a.end());
  std::sort(b.begin(), b.end());
  return a == b;
}

std::string list_workers(const std::vector<int>& workers) {
  constexpr std::size_t kShown = 20;
  std::string out;
  for (std::size_t i = 0; i < workers.size() && i < kShown; ++i) {
    out += (i == 0 ? "" : ", ") + std::to_string(workers[i]);
  }
  if (workers.size() > kShown) {
    out += fmt::format(", ... ({} in all)", workers.size());
  }
  return out;
}

}  // namespace

ThreadedBackend::ThreadedBackend(std::shared_ptr<const models::Objective> objective,
                                 Scheme scheme,
                                 std::unique_ptr<DelayModel> delays,
                                 std::uint64_t seed,
                                 ThreadedOptions options)
    : objective_(std::move(objective)), scheme_(std::move(scheme)), options_(std::move(options)) {
  STRAGGLERSIM_ASSERT(objective_ != nullptr && scheme_.code != nullptr && scheme_.rule != nullptr,
                      "threaded backend needs an objective, a code and a rule");
  STRAGGLERSIM_ASSERT(delays != nullptr, "threaded backend needs a delay model");
  STRAGGLERSIM_ASSERT(objective_->partitions() == scheme_.code->partitions(),
                      "code and objective must have the same partitions");
  STRAGGLERSIM_ASSERT(delays->workers() == scheme_.code->workers(),
                      "code and delays must have the same workers");
  STRAGGLERSIM_ASSERT(options_.seconds_per_unit > 0.0 && options_.timeout > 0.0,
                      "seconds_per_unit and timeout must be positive");
  n_ = scheme_.code->workers();
  for (const auto& f : options_.faults) {
    STRAGGLERSIM_ASSERT(f.worker >= 0 && f.worker < n_ && f.from_iteration >= 1,
                        "a fault must name a worker and an iteration >= 1");
  }
  cluster_ = std::make_unique<SimulatedCluster>(
      std::make_unique<FaultyDelay>(std::move(delays), options_.faults),
      scheme_.rule,
      options_.policy,
      seed);
  const auto n = static_cast<std::size_t>(n_);
  sim_busy_until_.assign(n, 0.0);
  sim_arrivals_.assign(n, 0.0);
  progress_.assign(n, 0);
  received_.resize(n);
  inbox_.reserve(n);
  batch_.reserve(n);
  threads_.reserve(n);
  try {
    for (int i = 0; i < n_; ++i) {
      threads_.emplace_back([this, i] { worker_loop(i); });
    }
  } catch (...) {
    {
      const std::lock_guard lock(mutex_);
      stop_ = true;
    }
    work_cv_.notify_all();
    for (auto& t : threads_) {
      t.join();
    }
    throw;
  }
}

ThreadedBackend::~ThreadedBackend() {
  {
    const std::lock_guard lock(mutex_);
    stop_ = true;
  }
  work_cv_.notify_all();
  for (auto& t : threads_) {
    t.join();
  }
}

const WorkerFault* ThreadedBackend::fault_of(int worker, std::uint64_t iteration) const {
  for (const auto& f : options_.faults) {
    if (f.worker == worker && iteration >= f.from_iteration) {
      return &f;
    }
  }
  return nullptr;
}

std::shared_ptr<const ThreadedBackend::Broadcast> ThreadedBackend::next_work(
    int worker, std::uint64_t done, std::unique_lock<std::mutex>& lock) {
  work_cv_.wait(lock, [&] { return stop_ || latest_.load(std::memory_order_relaxed) > done; });
  if (stop_) {
    return nullptr;
  }
  std::shared_ptr<const Broadcast> b = broadcasts_.back();
  if (options_.policy == StragglerPolicy::kFinish) {
    // Every broadcast is worked on in order, as a worker with a message queue would.
    for (const auto& candidate : broadcasts_) {
      if (candidate->iteration > done) {
        b = candidate;
        break;
      }
    }
  }
  progress_[static_cast<std::size_t>(worker)] = b->iteration;
  return b;
}

void ThreadedBackend::worker_loop(int worker) {
  tighten_timer_slack();
  const auto w = static_cast<std::size_t>(worker);
  const std::span<const int> support = scheme_.code->support(worker);
  const std::span<const double> values = scheme_.code->support_values(worker);
  const bool finish = options_.policy == StragglerPolicy::kFinish;
  Eigen::VectorXd buffer(objective_->dimension());
  std::uint64_t done = 0;
  Clock::time_point free_at{};

  std::unique_lock lock(mutex_);
  while (true) {
    const std::shared_ptr<const Broadcast> b = next_work(worker, done, lock);
    if (b == nullptr) {
      return;
    }
    done = b->iteration;
    const WorkerFault* fault = fault_of(worker, done);
    if (fault != nullptr && fault->kind == FaultKind::kCrash) {
      progress_[w] = std::numeric_limits<std::uint64_t>::max();  // needs no more broadcasts
      work_cv_.wait(lock, [&] { return stop_; });
      return;
    }
    lock.unlock();

    // The computation is real; under cancel and drain it is abandoned between partitions as
    // soon as a newer iteration has been broadcast.
    Eigen::VectorXd y = Eigen::VectorXd::Zero(objective_->dimension());
    bool abandoned = false;
    for (std::size_t s = 0; s < support.size(); ++s) {
      if (!finish && latest_.load(std::memory_order_acquire) != done) {
        abandoned = true;
        break;
      }
      objective_->partition_gradient(support[s], b->x, buffer);
      y.noalias() += values[s] * buffer;
    }
    const Clock::time_point computed = Clock::now();
    const double delay = b->delays[w];
    const Clock::time_point start = finish ? std::max(b->start, free_at) : b->start;
    const bool hang =
        (fault != nullptr && fault->kind == FaultKind::kHang) || !std::isfinite(delay);
    const Clock::time_point target =
        hang ? start : start + real_duration(delay * options_.seconds_per_unit);

    lock.lock();
    if (abandoned) {
      continue;
    }
    auto superseded = [&] {
      return stop_ || (!finish && latest_.load(std::memory_order_relaxed) != done);
    };
    if (hang) {
      if (finish) {
        progress_[w] = std::numeric_limits<std::uint64_t>::max();
      }
      work_cv_.wait(lock, superseded);
      if (stop_) {
        return;
      }
      continue;
    }
    // Sleep until just before the target, then yield-spin to it: a sleeping thread wakes tens
    // of µs late, by an amount that differs between threads and would reorder close arrivals.
    work_cv_.wait_until(lock, target - kSpinWindow, superseded);
    if (!superseded() && Clock::now() < target) {
      lock.unlock();
      while (Clock::now() < target && (finish || latest_.load(std::memory_order_acquire) == done)) {
        std::this_thread::yield();
      }
      lock.lock();
    }
    if (stop_) {
      return;
    }
    if (superseded()) {
      continue;  // cancelled while waiting out the delay
    }
    // Delivery = max(compute end, injected time): the next iteration (finish) starts then.
    free_at = std::max(computed, target);
    inbox_.push_back(Message{done, worker, Clock::now(), std::move(y)});
    inbox_cv_.notify_one();
  }
}

double ThreadedBackend::near_tie_gap(const IterationTiming& timing,
                                     std::span<const double> arrivals) const {
  // Only arrivals within ε of the stop can change the heard set when every arrival is moved by
  // at most ε (a swap of two arrivals well before the stop leaves the first stopping set
  // unchanged for monotone rules); under first_r only the arrivals after the stop count.
  const std::optional<StoppingShape> shape = scheme_.rule->shape();
  if (shape && shape->kind == RuleKind::kAll) {
    return kInfinity;
  }
  const bool first_r = shape && shape->kind == RuleKind::kFirstR;
  const double stop = timing.iteration_time;
  const int stopper = timing.heard.empty() ? -1 : timing.heard.back();
  double gap = kInfinity;
  for (std::size_t i = 0; i < arrivals.size(); ++i) {
    const double a = arrivals[i];
    if (!std::isfinite(a) || (static_cast<int>(i) == stopper && a == stop) ||
        (first_r && a < stop)) {
      continue;
    }
    gap = std::min(gap, std::abs(a - stop));
  }
  return gap;
}

BackendIteration ThreadedBackend::iterate(std::uint64_t iteration,
                                          const Eigen::VectorXd& query,
                                          const Eigen::MatrixXd* /*partition_gradients*/) {
  STRAGGLERSIM_ASSERT(iteration > latest_.load(), "iterations must increase");
  STRAGGLERSIM_ASSERT(query.size() == objective_->dimension(), "query has the wrong dimension");
  if (records_.empty()) {
    tighten_timer_slack();
  }
  const IterationTiming& timing = cluster_->next_iteration();
  const bool finish = options_.policy == StragglerPolicy::kFinish;
  for (std::size_t i = 0; i < sim_arrivals_.size(); ++i) {
    const double start = finish ? std::max(0.0, sim_busy_until_[i] - timing.broadcast) : 0.0;
    sim_arrivals_[i] = start + timing.delays[i];
  }

  auto fresh = std::make_shared<Broadcast>();
  fresh->iteration = iteration;
  fresh->x = query;
  fresh->delays = timing.delays;
  {
    const std::lock_guard lock(mutex_);
    fresh->start = Clock::now();
    broadcasts_.push_back(fresh);
    if (finish) {
      const std::uint64_t needed = *std::min_element(progress_.begin(), progress_.end());
      while (broadcasts_.size() > 1 && broadcasts_.front()->iteration <= needed) {
        broadcasts_.pop_front();
      }
    } else {
      while (broadcasts_.size() > 1) {
        broadcasts_.pop_front();
      }
    }
    latest_.store(iteration, std::memory_order_release);
  }
  work_cv_.notify_all();

  const Clock::time_point start = fresh->start;
  const double spu = options_.seconds_per_unit;
  const Clock::time_point timeout_at = start + real_duration(options_.timeout);
  std::optional<Clock::time_point> deadline_at;
  if (const auto after = scheme_.rule->deadline()) {
    deadline_at = start + real_duration(*after * spu);
  }
  const auto minimum = static_cast<std::size_t>(scheme_.rule->minimum_arrivals());

  ThreadedIterationRecord record;
  record.iteration = iteration;
  std::vector<int>& heard = record.heard;
  heard.reserve(static_cast<std::size_t>(n_));
  bool stopped = false;
  int answered = 0;  // messages of this iteration, before or after the stop
  Clock::time_point stop_at = start;

  auto take_batch = [&](std::unique_lock<std::mutex>& lock, Clock::time_point wake) {
    inbox_cv_.wait_until(lock, wake, [&] { return !inbox_.empty(); });
    batch_.clear();
    batch_.swap(inbox_);
  };

  {
    std::unique_lock lock(mutex_);
    while (!stopped) {
      take_batch(lock, deadline_at ? std::min(*deadline_at, timeout_at) : timeout_at);
      lock.unlock();
      for (Message& m : batch_) {
        if (m.iteration != iteration) {
          ++record.late_dropped;  // tagged with an older iteration: never used
          continue;
        }
        ++answered;
        if (stopped) {
          continue;
        }
        if (deadline_at && m.delivered > *deadline_at) {
          stopped = true;
          stop_at = *deadline_at;
          continue;
        }
        heard.push_back(m.worker);
        received_[static_cast<std::size_t>(m.worker)] = std::move(m.y);
        if (heard.size() >= minimum && scheme_.rule->stop_after(heard)) {
          stopped = true;
          stop_at = Clock::now();
        }
      }
      batch_.clear();
      if (!stopped) {
        const Clock::time_point now = Clock::now();
        if (deadline_at && now >= *deadline_at) {
          stopped = true;
          stop_at = now;
        } else if (now >= timeout_at) {
          std::vector<int> missing;
          for (int i = 0; i < n_; ++i) {
            if (std::find(heard.begin(), heard.end(), i) == heard.end()) {
              missing.push_back(i);
            }
          }
          throw BackendTimeout(fmt::format(
              "iteration {}: timeout: the {} rule was not satisfied {} s after the broadcast; "
              "heard {} of {} workers; not heard: {}",
              iteration,
              scheme_.rule->name(),
              options_.timeout,
              heard.size(),
              n_,
              list_workers(missing)));
        }
      }
      lock.lock();
    }
  }
  record.real_stop_seconds = seconds_between(start, stop_at);

  BackendIteration out;
  out.iteration_time = timing.iteration_time;
  out.wall_time = timing.wall_time;
  if (!std::isfinite(out.wall_time)) {
    // Drain with a faulty worker: the simulated master waits for every worker that answers.
    out.wall_time = timing.iteration_time;
    for (const double a : sim_arrivals_) {
      if (std::isfinite(a)) {
        out.wall_time = std::max(out.wall_time, a);
      }
    }
  }
  out.heard = heard;
  out.decoding = scheme_.decode(heard, iteration);
  out.estimate = Eigen::VectorXd::Zero(objective_->dimension());
  for (const int i : heard) {
    const double a = out.decoding.weights(i);
    if (a != 0.0) {
      out.estimate.noalias() += a * received_[static_cast<std::size_t>(i)];
    }
  }

  if (options_.policy == StragglerPolicy::kDrain) {
    // The next broadcast waits for every worker (a crashed or hung one only until the timeout).
    std::unique_lock lock(mutex_);
    while (answered < n_ && Clock::now() < timeout_at) {
      take_batch(lock, timeout_at);
      for (const Message& m : batch_) {
        if (m.iteration == iteration) {
          ++answered;
        } else {
          ++record.late_dropped;
        }
      }
      batch_.clear();
    }
  }

  if (finish) {
    // Mirror of the cluster's bookkeeping: workers not heard in the simulation stay busy.
    std::fill(sim_busy_until_.begin(), sim_busy_until_.end(), 0.0);
    for (std::size_t i = 0; i < sim_arrivals_.size(); ++i) {
      if (std::find(timing.heard.begin(), timing.heard.end(), static_cast<int>(i)) ==
          timing.heard.end()) {
        sim_busy_until_[i] = timing.broadcast + sim_arrivals_[i];
      }
    }
  }

  record.simulated_stop = timing.iteration_time;
  record.simulated_heard = timing.heard;
  record.same_set = same_set(heard, timing.heard);
  record.near_tie_gap = near_tie_gap(timing, sim_arrivals_);
  record.real_seconds = seconds_between(start, Clock::now());
  out.real_seconds = record.real_seconds;
  records_.push_back(std::move(record));
  return out;
}

}  // namespace stragglersim::sim
