#include "sim/fastpath/delay_only.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "models/base/invariant.h"
#include "sim/regrouping.h"

namespace stragglersim::sim {

void DelayOnlyStatistics::add(double iteration_time) {
  ++iterations;
  const double delta = iteration_time - mean;
  mean += delta / static_cast<double>(iterations);
  m2 += delta * (iteration_time - mean);
}

double DelayOnlyStatistics::variance() const {
  return iterations > 1 ? m2 / static_cast<double>(iterations - 1) : 0.0;
}

double DelayOnlyStatistics::standard_error() const {
  return iterations > 1 ? std::sqrt(variance() / static_cast<double>(iterations)) : 0.0;
}

double DelayOnlyStatistics::erasure_fraction() const {
  return groups == 0 || iterations == 0
             ? 0.0
             : erased_groups / (static_cast<double>(groups) * static_cast<double>(iterations));
}

DelayOnlySimulator::DelayOnlySimulator(std::unique_ptr<DelayModel> delays,
                                       std::shared_ptr<const StoppingRule> rule,
                                       std::shared_ptr<const codes::GradientCode> code,
                                       StragglerPolicy policy,
                                       std::uint64_t seed,
                                       const NetworkOptions& network,
                                       Sampler sampler,
                                       std::optional<CollectiveAggregation> collective)
    : delays_(std::move(delays)),
      rule_(std::move(rule)),
      code_(std::move(code)),
      policy_(policy),
      rng_(make_engine(seed, Stream::kDelays)),
      network_(network) {
  STRAGGLERSIM_ASSERT(delays_ && rule_ && code_, "delay-only run needs delays, rule and code");
  STRAGGLERSIM_ASSERT(delays_->workers() == code_->workers(), "delay model and code disagree on n");
  const codes::CodeStructure structure = code_->structure();
  if (structure.layout == codes::CodeLayout::kGroups) {
    d_ = structure.group_size;
    has_groups_ = true;
  }
  if (sampler == Sampler::kOrderStatistics) {
    STRAGGLERSIM_ASSERT(!collective, "a collective needs every rank's time: the worker sampler");
    const auto why = order_statistics_unavailable(*delays_, *rule_, *code_, policy_);
    STRAGGLERSIM_ASSERT(!why, "order-statistics sampling needs i.i.d. workers");
    STRAGGLERSIM_ASSERT(network_.options().is_free(), "order-statistics sampling has no network");
    const ShiftedExponentialShape se = *delays_->shifted_exponential();
    order_statistics_.emplace(se.worker_shift[0],
                              se.worker_scale[0],
                              *rule_->shape(),
                              code_->workers(),
                              d_,
                              has_groups_,
                              policy_);
    return;
  }
  const std::optional<StoppingShape> shape = rule_->shape();
  bool selectable = shape.has_value();
  if (shape) {
    kind_ = shape->kind;
    r_ = shape->r;
    deadline_ = shape->deadline;
    // Decodability is cheap to track only for group codes.
    if (kind_ == Kind::kDecodable || kind_ == Kind::kFirstROrDecodable) {
      selectable = has_groups_;
    }
  }
  // A regrouping code permutes the workers every K iterations: the cluster keeps that state; a
  // time-varying delay model needs each computation's start, which the cluster's clock gives.
  const std::optional<RegroupOptions> regroup = regrouping_of(*code_);
  // A collective needs every rank's compute end and the schedule's completions: the cluster's.
  if (!selectable || regroup || delays_->time_varying() || collective) {
    fallback_ = std::make_unique<SimulatedCluster>(
        std::move(delays_), rule_, policy_, seed, network, regroup, std::move(collective));
    return;
  }
  const auto n = static_cast<std::size_t>(code_->workers());
  STRAGGLERSIM_ASSERT(kind_ != Kind::kFirstR || (r_ >= 1 && static_cast<std::size_t>(r_) <= n),
                      "first_r needs 1 <= r <= n");
  delays_buffer_.resize(n);
  scratch_.resize(n);
  if (policy_ == StragglerPolicy::kFinish) {
    arrivals_.resize(n);
    busy_until_.assign(n, 0.0);
  }
  if (!network.is_free()) {
    delivered_.resize(n);
  }
}

int DelayOnlySimulator::groups_heard(const std::vector<int>& heard) {
  if (!has_groups_) {
    if (!count_coverage_) {
      return 0;
    }
    if (code_->structure().decoder != codes::DecoderFamily::kLinearAlgebra) {
      return code_->decode_optimal(heard).partitions_covered;
    }
    if (!coverage_memo_) {
      coverage_memo_ = std::make_unique<codes::DecodeMemo>(code_);
    }
    return (*coverage_memo_)(heard).partitions_covered;
  }
  // Group codes (possibly compact, which do not decode): group g = workers [g·d, (g+1)·d).
  covered_.assign(static_cast<std::size_t>(code_->workers() / d_), 0);
  int covered = 0;
  for (const int worker : heard) {
    char& seen = covered_[static_cast<std::size_t>(worker / d_)];
    covered += seen == 0 ? 1 : 0;
    seen = 1;
  }
  return covered;
}

int DelayOnlySimulator::groups_received(const std::vector<int>& received) {
  if (!has_groups_) {
    return static_cast<int>(received.size());
  }
  covered_.assign(static_cast<std::size_t>(code_->partitions()), 0);
  for (const int j : received) {
    covered_[static_cast<std::size_t>(j)] = 1;
  }
  int covered = 0;
  for (int g = 0; g < code_->workers() / d_; ++g) {
    const auto block = code_->support(g * d_);
    covered += std::ranges::all_of(
                   block, [&](int j) { return covered_[static_cast<std::size_t>(j)] != 0; })
                   ? 1
                   : 0;
  }
  return covered;
}

namespace {

double max_of(const std::vector<double>& v) { return *std::max_element(v.begin(), v.end()); }

/// Max over consecutive groups of `d` of the group's minimum: when the last group is first
/// covered.
double last_group_cover(const std::vector<double>& v, int d) {
  double worst = -std::numeric_limits<double>::infinity();
  const auto g = static_cast<std::size_t>(d);
  for (std::size_t start = 0; start < v.size(); start += g) {
    const double first = *std::min_element(v.begin() + static_cast<std::ptrdiff_t>(start),
                                           v.begin() + static_cast<std::ptrdiff_t>(start + g));
    worst = std::max(worst, first);
  }
  return worst;
}

/// Groups of `d` consecutive workers with at least one arrival by `stop`.
inline int groups_covered(const std::vector<double>& a, int d, double stop) {
  int covered = 0;
  const auto g = static_cast<std::size_t>(d);
  for (std::size_t start = 0; start < a.size(); start += g) {
    const double first = *std::min_element(a.begin() + static_cast<std::ptrdiff_t>(start),
                                           a.begin() + static_cast<std::ptrdiff_t>(start + g));
    covered += first <= stop ? 1 : 0;
  }
  return covered;
}

}  // namespace

double select_rth(const std::vector<double>& values,
                  int r,
                  std::vector<double>& scratch,
                  std::vector<double>& sample) {
  const auto n = values.size();
  const auto rank = static_cast<std::size_t>(r - 1);
  auto full_select = [&] {
    scratch.assign(values.begin(), values.end());
    const auto nth = scratch.begin() + static_cast<std::ptrdiff_t>(rank);
    std::nth_element(scratch.begin(), nth, scratch.end());
    return *nth;
  };
  if (n < 2048) {
    return full_select();
  }
  // Floyd–Rivest style: a strided sample of ~2·n^(2/3) values (Floyd & Rivest 1975) brackets the
  // r-th value between two pivots; one streaming pass counts the values below the low pivot and
  // keeps the few in between, which a small nth_element finishes. The answer is exact whatever the
  // sample: when the bracket misses, the full selection runs instead.
  const std::size_t stride = std::max<std::size_t>(
      1,
      n / std::max<std::size_t>(
              64, static_cast<std::size_t>(2.0 * std::pow(static_cast<double>(n), 2.0 / 3.0))));
  sample.clear();
  for (std::size_t i = 0; i < n; i += stride) {
    sample.push_back(values[i]);
  }
  const double m = static_cast<double>(sample.size());
  const double position = m * static_cast<double>(rank) / static_cast<double>(n);
  // Four standard deviations of the sample rank of the r-th value: a miss (then the full
  // selection) happens in well under 0.1% of iterations.
  const double pr = static_cast<double>(rank) / static_cast<double>(n);
  const double margin = 4.0 * std::sqrt(m * pr * (1.0 - pr)) + 2.0;
  const auto lo_rank = static_cast<std::size_t>(std::max(0.0, position - margin));
  const auto hi_rank = static_cast<std::size_t>(std::min(m - 1.0, position + margin));
  std::nth_element(
      sample.begin(), sample.begin() + static_cast<std::ptrdiff_t>(lo_rank), sample.end());
  const double lo = lo_rank == 0 ? -std::numeric_limits<double>::infinity() : sample[lo_rank];
  std::nth_element(sample.begin() + static_cast<std::ptrdiff_t>(lo_rank),
                   sample.begin() + static_cast<std::ptrdiff_t>(hi_rank),
                   sample.end());
  const double hi =
      hi_rank + 1 >= sample.size() ? std::numeric_limits<double>::infinity() : sample[hi_rank];
  std::size_t below = 0;
  std::size_t kept = 0;
  scratch.resize(n);
  double* keep = scratch.data();
  for (const double v : values) {
    below += v < lo ? 1U : 0U;
    keep[kept] = v;
    // Branch-free compaction: `&` not `&&`, whose short circuit is a mispredicted branch.
    // NOLINTNEXTLINE(readability-implicit-bool-conversion): the bools are added on purpose
    kept += static_cast<std::size_t>((v >= lo) & (v <= hi));
  }
  if (rank < below || rank >= below + kept) {
    return full_select();
  }
  const auto nth = scratch.begin() + static_cast<std::ptrdiff_t>(rank - below);
  std::nth_element(scratch.begin(), nth, scratch.begin() + static_cast<std::ptrdiff_t>(kept));
  return *nth;
}

DelayOnlySimulator::Stop DelayOnlySimulator::rule_stop(const std::vector<double>& a) {
  const int n = static_cast<int>(a.size());
  auto rth = [&](int r) { return select_rth(a, r, scratch_, sample_); };
  double stop = 0.0;
  int heard = -1;  // -1: count arrivals <= stop
  switch (kind_) {
    case Kind::kAll:
      stop = max_of(a);
      heard = n;
      break;
    case Kind::kFirstR:
      stop = rth(r_);
      heard = r_;
      break;
    case Kind::kDeadline:
      stop = std::min(deadline_, max_of(a));
      break;
    case Kind::kDecodable:
      stop = last_group_cover(a, d_);
      break;
    case Kind::kFirstROrDecodable: {
      const double cover = last_group_cover(a, d_);
      const double r_time = rth(r_);
      stop = std::min(cover, r_time);
      heard = r_time <= cover ? r_ : -1;
      break;
    }
  }
  if (heard < 0) {
    heard =
        static_cast<int>(std::count_if(a.begin(), a.end(), [&](double t) { return t <= stop; }));
  }
  return {stop, heard};
}

DelayOnlyIteration DelayOnlySimulator::step() {
  DelayOnlyIteration out;
  out.iteration = ++iteration_;
  delays_->sample(iteration_, rng_, delays_buffer_);
  const std::vector<double>* arrivals = &delays_buffer_;
  if (policy_ == StragglerPolicy::kFinish) {
    for (std::size_t i = 0; i < arrivals_.size(); ++i) {
      arrivals_[i] = std::max(0.0, busy_until_[i] - time_) + delays_buffer_[i];
    }
    arrivals = &arrivals_;
  }
  // `compute` holds the compute ends, `a` the arrivals at the master.
  const std::vector<double>& compute = *arrivals;
  if (!delivered_.empty()) {
    network_.deliver(compute, delivered_);
    arrivals = &delivered_;
  }
  const std::vector<double>& a = *arrivals;
  const auto [stop, heard] = rule_stop(a);
  out.workers_heard = heard;
  out.iteration_time = stop;
  out.wall_time = policy_ == StragglerPolicy::kDrain ? max_of(a) : stop;
  if (has_groups_) {
    out.groups_covered = d_ == 1 ? heard : groups_covered(a, d_, stop);
  }
  if (policy_ == StragglerPolicy::kFinish) {
    for (std::size_t i = 0; i < a.size(); ++i) {
      busy_until_[i] = a[i] > stop ? time_ + compute[i] : 0.0;
    }
  }
  time_ += stop;
  return out;
}

DelayOnlyStatistics DelayOnlySimulator::run(
    std::uint64_t iterations,
    const std::function<void(const DelayOnlyIteration&)>& on_iteration,
    double time_budget) {
  DelayOnlyStatistics stats;
  if (has_groups_) {
    stats.groups = static_cast<std::uint64_t>(code_->workers() / d_);
  }
  for (std::uint64_t t = 0; t < iterations; ++t) {
    DelayOnlyIteration it;
    if (order_statistics_) {
      const OrderStatisticDraw draw = order_statistics_->draw(rng_);
      it.iteration = ++iteration_;
      it.iteration_time = draw.stop;
      it.wall_time = draw.wall;
      it.workers_heard = static_cast<int>(draw.heard);
      it.groups_covered = static_cast<int>(draw.covered);
    } else if (fallback_) {
      const IterationTiming& timing = fallback_->next_iteration();
      it.iteration = timing.iteration;
      it.iteration_time = timing.iteration_time;
      it.wall_time = timing.wall_time;
      it.workers_heard = static_cast<int>(timing.heard.size());
      it.groups_covered = rule_->partition_orders() != nullptr ? groups_received(timing.received)
                                                               : groups_heard(timing.heard);
    } else {
      it = step();
    }
    stats.add(it.iteration_time);
    stats.total_time += it.iteration_time;
    stats.total_wall_time += it.wall_time;
    if (stats.groups > 0) {
      stats.erased_groups += static_cast<double>(stats.groups) - it.groups_covered;
    }
    if (on_iteration) {
      on_iteration(it);
    }
    if (stats.total_time >= time_budget) {
      break;
    }
  }
  return stats;
}

}  // namespace stragglersim::sim
