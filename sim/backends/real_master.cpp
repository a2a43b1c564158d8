#include "sim/backends/real_master.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <string>
#include <utility>

#include "models/base/invariant.h"
#include "models/base/stop_request.h"
#include "sim/regrouping.h"

#ifdef __linux__
#include <sys/prctl.h>
#endif

namespace stragglersim::sim {
namespace {

constexpr double kInfinity = std::numeric_limits<double>::infinity();
/// Longest wait ever scheduled (real seconds); keeps time_point arithmetic far from overflow.
constexpr double kLongestWait = 1.0e6;

double seconds_between(std::chrono::steady_clock::time_point from,
                       std::chrono::steady_clock::time_point to) {
  return std::chrono::duration<double>(to - from).count();
}

/// The run's delay model with faulty workers' delays replaced from their first faulty iteration
/// by +inf (crash, hang) or T_i · factor (slow): the inner model still draws every worker, so
/// the stream is consumed exactly as in a fault-free run.
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
        double& t = out[static_cast<std::size_t>(f.worker)];
        t = f.kind == FaultKind::kSlow ? t * f.factor : kInfinity;
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

void tighten_timer_slack() {
#ifdef __linux__
  (void)::prctl(PR_SET_TIMERSLACK, 1UL, 0UL, 0UL, 0UL);
#endif
}

std::chrono::steady_clock::duration real_duration(double seconds) {
  return std::chrono::duration_cast<std::chrono::steady_clock::duration>(
      std::chrono::duration<double>(std::clamp(seconds, 0.0, kLongestWait)));
}

Validation ThreadedOptions::validate() const {
  if (auto v = options_check::positive("seconds_per_unit", seconds_per_unit)) {
    return v;
  }
  if (!(timeout > 0.0 && timeout <= kMaxThreadedTimeout)) {
    return Violation{
        "timeout", "out of range", fmt::format("a number in (0, {}] seconds", kMaxThreadedTimeout)};
  }
  return std::nullopt;
}

RealMaster::RealMaster(Scheme scheme,
                       Eigen::Index dimension,
                       std::unique_ptr<DelayModel> delays,
                       std::uint64_t seed,
                       ThreadedOptions options)
    : scheme_(std::move(scheme)), dimension_(dimension), options_(std::move(options)) {
  options_check::require_valid(options_);
  STRAGGLERSIM_ASSERT(scheme_.code != nullptr && scheme_.rule != nullptr,
                      "the master needs a code and a rule");
  STRAGGLERSIM_ASSERT(delays != nullptr, "the master needs a delay model");
  STRAGGLERSIM_ASSERT(delays->workers() == scheme_.code->workers(),
                      "code and delays must have the same workers");
  n_ = scheme_.code->workers();
  STRAGGLERSIM_ASSERT(!options_.collective ||
                          (options_.policy == StragglerPolicy::kCancel && options_.faults.empty()),
                      "a collective runs under cancel without faults (the config refuses them)");
  for (const auto& f : options_.faults) {
    STRAGGLERSIM_ASSERT(f.worker >= 0 && f.worker < n_ && f.from_iteration >= 1,
                        "a fault must name a worker and an iteration >= 1");
    STRAGGLERSIM_ASSERT(
        f.kind != FaultKind::kSlow || (f.factor >= 1.0 && f.factor <= kMaxSlowFactor),
        "a slow worker's factor must be in [1, 1e6]");
  }
  cluster_ = std::make_unique<SimulatedCluster>(
      std::make_unique<FaultyDelay>(std::move(delays), options_.faults),
      scheme_.rule,
      options_.policy,
      seed,
      NetworkOptions{},
      regrouping_of(*scheme_.code),
      options_.collective);
  const auto n = static_cast<std::size_t>(n_);
  sim_busy_until_.assign(n, 0.0);
  sim_arrivals_.assign(n, 0.0);
  received_.resize(n);
  completed_.assign(n, 0);
  batch_.reserve(n);
}

const WorkerFault* RealMaster::fault_of(int worker, std::uint64_t iteration) const {
  for (const auto& f : options_.faults) {
    if (f.worker == worker && iteration >= f.from_iteration) {
      return &f;
    }
  }
  return nullptr;
}

double RealMaster::near_tie_gap(const IterationTiming& timing,
                                std::span<const double> arrivals) const {
  // Only arrivals within ε of the stop can change the heard set when every arrival is moved by
  // at most ε (a swap of two arrivals well before the stop leaves the first stopping set
  // unchanged for monotone rules); under first_r only the arrivals after the stop count.
  const std::optional<StoppingShape> shape = scheme_.rule->shape();
  if (shape && shape->kind == RuleKind::kAll) {
    return kInfinity;
  }
  // The adaptive r stops each iteration at an r-th arrival as first_r does.
  const bool first_r = (shape && shape->kind == RuleKind::kFirstR) || timing.needed.has_value();
  // With a collective the iteration time runs on to the last completion; the rule's stop t* is
  // the latest ready time min(compute end, t*).
  const double stop = timing.ready.empty()
                          ? timing.iteration_time
                          : *std::max_element(timing.ready.begin(), timing.ready.end());
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

void RealMaster::simulate_arrivals(const IterationTiming& timing) {
  const bool finish = options_.policy == StragglerPolicy::kFinish;
  for (std::size_t i = 0; i < sim_arrivals_.size(); ++i) {
    const double start = finish ? std::max(0.0, sim_busy_until_[i] - timing.broadcast) : 0.0;
    sim_arrivals_[i] = start + timing.delays[i];
  }
}

void RealMaster::accept(Round& round, WorkerMessage& m) {
  if (m.iteration != round.iteration) {
    ++round.record.late_dropped;  // tagged with an older iteration: never used
    return;
  }
  ++round.answered;
  STRAGGLERSIM_ASSERT(m.kind == (options_.collective ? MessageKind::kNotice : MessageKind::kResult),
                      "a worker's first message of an iteration is its result or notice");
  if (round.stopped) {
    return;
  }
  if (round.deadline_at && m.delivered > *round.deadline_at) {
    round.stopped = true;
    round.stop_at = *round.deadline_at;
    return;
  }
  std::vector<int>& heard = round.record.heard;
  heard.push_back(m.worker);
  received_[static_cast<std::size_t>(m.worker)] = std::move(m.y);
  const bool enough = round.needed ? heard.size() >= static_cast<std::size_t>(*round.needed)
                                   : scheme_.rule->stop_after(heard);
  if (heard.size() >= static_cast<std::size_t>(scheme_.rule->minimum_arrivals()) && enough) {
    round.stopped = true;
    round.stop_at = Clock::now();
  }
}

void RealMaster::fail_timeout(const Round& round) const {
  const std::vector<int>& heard = round.record.heard;
  std::vector<int> missing;
  for (int i = 0; i < n_; ++i) {
    if (std::find(heard.begin(), heard.end(), i) == heard.end()) {
      missing.push_back(i);
    }
  }
  throw BackendTimeout(
      fmt::format("iteration {}: timeout: the {} rule was not satisfied {} s after the broadcast; "
                  "heard {} of {} workers; not heard: {}",
                  round.iteration,
                  scheme_.rule->name(),
                  options_.timeout,
                  heard.size(),
                  n_,
                  list_workers(missing)));
}

namespace {

/// The earlier of `wake` and one stop poll from now; throws models::StopRequested when a signal
/// was recorded.
RealMaster::Clock::time_point poll_for_stop(RealMaster::Clock::time_point wake) {
  if (const int signal = models::stop_signal().load(std::memory_order_relaxed); signal != 0) {
    throw models::StopRequested(signal);
  }
  return std::min(wake, RealMaster::Clock::now() + RealMaster::kStopPoll);
}

}  // namespace

void RealMaster::collect(Round& round, MasterTransport& transport) {
  const Clock::time_point wake =
      round.deadline_at ? std::min(*round.deadline_at, round.timeout_at) : round.timeout_at;
  while (!round.stopped) {
    batch_.clear();
    transport.receive(poll_for_stop(wake), batch_);
    for (WorkerMessage& m : batch_) {
      accept(round, m);
    }
    batch_.clear();
    if (round.stopped) {
      break;
    }
    const Clock::time_point now = Clock::now();
    if (round.deadline_at && now >= *round.deadline_at) {
      round.stopped = true;
      round.stop_at = now;
    } else if (now >= round.timeout_at) {
      fail_timeout(round);
    }
  }
}

void RealMaster::drain(Round& round, MasterTransport& transport) {
  // The next broadcast waits for every worker (a crashed or hung one only until the timeout).
  while (round.answered < n_ && Clock::now() < round.timeout_at) {
    batch_.clear();
    transport.receive(poll_for_stop(round.timeout_at), batch_);
    for (const WorkerMessage& m : batch_) {
      if (m.iteration == round.iteration) {
        ++round.answered;
      } else {
        ++round.record.late_dropped;
      }
    }
  }
  batch_.clear();
}

namespace {

/// The iteration's simulated times (drained waits included) without the estimate.
BackendIteration timed(const IterationTiming& timing, std::span<const double> arrivals) {
  BackendIteration out;
  out.iteration_time = timing.iteration_time;
  out.deadline = timing.deadline;
  out.wall_time = timing.wall_time;
  if (!std::isfinite(out.wall_time)) {
    // Drain with a faulty worker: the simulated master waits for every worker that answers.
    out.wall_time = timing.iteration_time;
    for (const double a : arrivals) {
      if (std::isfinite(a)) {
        out.wall_time = std::max(out.wall_time, a);
      }
    }
  }
  return out;
}

}  // namespace

BackendIteration RealMaster::decode(const Round& round, const IterationTiming& timing) {
  BackendIteration out = timed(timing, sim_arrivals_);
  out.heard = round.record.heard;
  out.decoding = scheme_.decode(out.heard, round.iteration);
  // Worker order, not arrival order: the same heard set gives the simulated backend's bytes.
  out.estimate = combine_messages(out.decoding, dimension_, [&](int i) -> const Eigen::VectorXd& {
    return received_[static_cast<std::size_t>(i)];
  });
  return out;
}

BackendIteration RealMaster::run_collective(Round& round,
                                            const IterationTiming& timing,
                                            MasterTransport& transport) {
  BackendIteration out = timed(timing, sim_arrivals_);
  // The simulated twin's per-rank times (workers.csv), as the simulated backend reports them;
  // the measured ones are in the records (collective.csv).
  out.collective_seconds.resize(timing.ready.size());
  for (std::size_t i = 0; i < timing.ready.size(); ++i) {
    out.collective_seconds[i] = timing.completion[i] - timing.ready[i];
  }
  out.arrived_last = static_cast<int>(
      std::max_element(timing.arrivals.begin(), timing.arrivals.end()) - timing.arrivals.begin());
  out.heard = round.record.heard;
  out.decoding = scheme_.decode(out.heard, round.iteration);
  transport.announce(round.iteration, out.decoding.weights);
  await_completions(round, transport);
  out.estimate = std::move(reduced_);
  STRAGGLERSIM_ASSERT(out.estimate.size() == dimension_, "worker 0 returns the reduced vector");
  return out;
}

void RealMaster::fail_collective_timeout(const Round& round) const {
  std::vector<int> missing;
  for (int i = 0; i < n_; ++i) {
    if (completed_[static_cast<std::size_t>(i)] == 0) {
      missing.push_back(i);
    }
  }
  throw BackendTimeout(
      fmt::format("iteration {}: timeout: the {} collective was not complete {} s after the "
                  "broadcast; {} of {} workers completed it; not completed: {}",
                  round.iteration,
                  collectives::kind_name(options_.collective->options.kind),
                  options_.timeout,
                  n_ - static_cast<int>(missing.size()),
                  n_,
                  list_workers(missing)));
}

void RealMaster::await_completions(Round& round, MasterTransport& transport) {
  ThreadedIterationRecord& record = round.record;
  const auto n = static_cast<std::size_t>(n_);
  record.compute_seconds.assign(n, std::numeric_limits<double>::quiet_NaN());
  record.collective_seconds.assign(n, std::numeric_limits<double>::quiet_NaN());
  std::fill(completed_.begin(), completed_.end(), 0);
  int completed = 0;
  Clock::time_point last = round.stop_at;
  while (completed < n_) {
    batch_.clear();
    transport.receive(poll_for_stop(round.timeout_at), batch_);
    for (WorkerMessage& m : batch_) {
      if (m.iteration != round.iteration) {
        ++record.late_dropped;
        continue;
      }
      if (m.kind != MessageKind::kDone) {
        ++round.answered;  // a notice that came after the stop
        continue;
      }
      const auto w = static_cast<std::size_t>(m.worker);
      STRAGGLERSIM_ASSERT(completed_[w] == 0, "a worker completes a collective once");
      completed_[w] = 1;
      ++completed;
      record.compute_seconds[w] = m.compute_seconds;
      record.collective_seconds[w] = m.collective_seconds;
      last = std::max(last, m.delivered);
      if (m.worker == 0) {
        reduced_ = std::move(m.y);
      }
    }
    batch_.clear();
    if (completed < n_ && Clock::now() >= round.timeout_at) {
      fail_collective_timeout(round);
    }
  }
  record.real_stop_seconds = seconds_between(round.start, last);
}

void RealMaster::update_finish_bookkeeping(const IterationTiming& timing) {
  // Mirror of the cluster's bookkeeping: workers not heard in the simulation stay busy.
  std::fill(sim_busy_until_.begin(), sim_busy_until_.end(), 0.0);
  for (std::size_t i = 0; i < sim_arrivals_.size(); ++i) {
    if (std::find(timing.heard.begin(), timing.heard.end(), static_cast<int>(i)) ==
        timing.heard.end()) {
      sim_busy_until_[i] = timing.broadcast + sim_arrivals_[i];
    }
  }
}

BackendIteration RealMaster::iterate(std::uint64_t iteration,
                                     const Eigen::VectorXd& query,
                                     MasterTransport& transport) {
  STRAGGLERSIM_ASSERT(iteration > last_iteration_, "iterations must increase");
  STRAGGLERSIM_ASSERT(query.size() == dimension_, "query has the wrong dimension");
  if (records_.empty()) {
    tighten_timer_slack();
  }
  last_iteration_ = iteration;
  const IterationTiming& timing = cluster_->next_iteration();
  simulate_arrivals(timing);

  Round round;
  round.iteration = iteration;
  round.start = transport.broadcast(iteration, query, timing.delays);
  round.stop_at = round.start;
  round.timeout_at = round.start + real_duration(options_.timeout);
  if (const auto after = timing.deadline) {
    round.deadline_at = round.start + real_duration(*after * options_.seconds_per_unit);
  }
  round.needed = timing.needed;
  round.record.iteration = iteration;
  round.record.heard.reserve(static_cast<std::size_t>(n_));
  collect(round, transport);
  round.record.real_stop_seconds = seconds_between(round.start, round.stop_at);
  round.record.real_rule_stop_seconds = round.record.real_stop_seconds;

  BackendIteration out =
      options_.collective ? run_collective(round, timing, transport) : decode(round, timing);
  if (options_.policy == StragglerPolicy::kDrain) {
    drain(round, transport);
  }
  if (options_.policy == StragglerPolicy::kFinish) {
    update_finish_bookkeeping(timing);
  }

  ThreadedIterationRecord& record = round.record;
  record.simulated_stop = timing.iteration_time;
  record.simulated_heard = timing.heard;
  record.same_set = same_set(record.heard, timing.heard);
  record.near_tie_gap = near_tie_gap(timing, sim_arrivals_);
  const Clock::time_point now = Clock::now();
  record.real_seconds = seconds_between(round.start, now);
  record.real_wall_seconds = seconds_between(last_return_.value_or(round.start), now);
  last_return_ = now;
  out.real_seconds = record.real_seconds;
  records_.push_back(std::move(record));
  return out;
}

}  // namespace stragglersim::sim
