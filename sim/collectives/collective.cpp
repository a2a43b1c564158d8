#include "sim/collectives/collective.h"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cmath>

#include "models/base/invariant.h"
#include "sim/collectives/schedule_builders.h"

namespace stragglersim::sim::collectives {

namespace {

constexpr std::array<std::string_view, 6> kKindNames = {
    "ring", "tree", "halving_doubling", "direct", "hierarchical", "stragglar"};

Validation check_links(const CollectiveOptions& o) {
  return options_check::first_of({options_check::at_least("latency", o.link.latency, 0.0),
                                  options_check::positive("bandwidth", o.link.bandwidth),
                                  options_check::at_least("intra_latency", o.intra.latency, 0.0),
                                  options_check::positive("intra_bandwidth", o.intra.bandwidth)});
}

Validation check_hierarchical(int node_size, int ranks) {
  if (node_size >= 1 && ranks % node_size == 0) {
    return std::nullopt;
  }
  return Violation{"node_size", "does not divide workers", fmt::format("a divisor of {}", ranks)};
}

Validation check_stragglar(int straggler, int ranks) {
  if (straggler == -1) {
    return Violation{"straggler", "missing", fmt::format("an integer in [0, {}]", ranks - 1)};
  }
  if (straggler < 0 || straggler >= ranks) {
    return options_check::integer_in_range("straggler", straggler, 0, ranks - 1);
  }
  if (ranks < 2) {
    return Violation{"workers", "too few for stragglar", "at least 2"};
  }
  return std::nullopt;
}

// One rank's part of one round: its port's busy time and its senders' port ends.
struct Part {
  double latency = 0.0;
  double send = 0.0;
  double receive = 0.0;
  bool active = false;
  bool receives = false;
};

// The max-plus recursion of the α–β model (collective.h) on a value that is either a time
// (double) or a vector of offsets per ready time (max and + elementwise, −∞ for "no path").
template <typename Value, typename Ops>
void propagate(const Schedule& schedule,
               const CollectiveOptions& options,
               double bytes_per_element,
               std::vector<Value>& end,
               std::vector<Value>& completion) {
  const auto n = static_cast<std::size_t>(schedule.ranks);
  std::vector<Part> part(n);
  std::vector<Value> start(n);
  std::vector<Value> finish(n);
  std::vector<int> touched;
  std::size_t first = 0;
  const auto& transfers = schedule.transfers;
  while (first < transfers.size()) {
    std::size_t last = first;
    while (last < transfers.size() && transfers[last].round == transfers[first].round) {
      ++last;
    }
    touched.clear();
    for (std::size_t t = first; t < last; ++t) {
      const Transfer& x = transfers[t];
      const LinkCost& link = x.intra ? options.intra : options.link;
      const double seconds =
          static_cast<double>(x.end - x.begin) * bytes_per_element / link.bandwidth;
      for (const int r : {x.source, x.destination}) {
        auto& p = part[static_cast<std::size_t>(r)];
        if (!p.active) {
          p = Part{};
          p.active = true;
          touched.push_back(r);
          start[static_cast<std::size_t>(r)] = end[static_cast<std::size_t>(r)];
        }
        p.latency = std::max(p.latency, link.latency);
      }
      part[static_cast<std::size_t>(x.source)].send += seconds;
      auto& d = part[static_cast<std::size_t>(x.destination)];
      d.receive += seconds;
      d.receives = true;
      Ops::max_into(start[static_cast<std::size_t>(x.destination)],
                    end[static_cast<std::size_t>(x.source)]);
    }
    for (const int r : touched) {
      const auto i = static_cast<std::size_t>(r);
      finish[i] = start[i];
      Ops::add(finish[i], part[i].latency + std::max(part[i].send, part[i].receive));
      end[i] = finish[i];
    }
    for (std::size_t t = first; t < last; ++t) {
      Ops::max_into(end[static_cast<std::size_t>(transfers[t].destination)],
                    finish[static_cast<std::size_t>(transfers[t].source)]);
    }
    for (const int r : touched) {
      const auto i = static_cast<std::size_t>(r);
      if (part[i].receives) {
        completion[i] = end[i];
      }
      part[i].active = false;
    }
    first = last;
  }
}

struct TimeOps {
  using Value = double;
  static void max_into(double& a, double b) { a = std::max(a, b); }
  static void add(double& a, double c) { a += c; }
};

struct OffsetOps {
  using Value = std::vector<double>;
  static void max_into(Value& a, const Value& b) {
    for (std::size_t j = 0; j < a.size(); ++j) {
      a[j] = std::max(a[j], b[j]);
    }
  }
  static void add(Value& a, double c) {
    for (double& x : a) {
      x += c;  // −∞ + c stays −∞
    }
  }
};

}  // namespace

std::span<const std::string_view> kind_names() { return kKindNames; }

std::string_view kind_name(CollectiveKind kind) {
  return kKindNames.at(static_cast<std::size_t>(kind));
}

Validation CollectiveOptions::validate(int ranks) const {
  if (ranks < 1) {
    return Violation{"workers", "out of range", "an integer >= 1"};
  }
  if (auto v = check_links(*this)) {
    return v;
  }
  if (kind == CollectiveKind::kHierarchical) {
    return check_hierarchical(node_size, ranks);
  }
  if (kind == CollectiveKind::kStragglar) {
    return check_stragglar(straggler, ranks);
  }
  return std::nullopt;
}

Schedule build_schedule(const CollectiveOptions& options, int ranks, Eigen::Index elements) {
  const Validation v = options.validate(ranks);
  STRAGGLERSIM_ASSERT(!v, v ? v->field + ": " + v->problem : "");
  STRAGGLERSIM_ASSERT(elements >= 1, "a collective reduces a vector of at least one element");
  Schedule schedule;
  schedule.ranks = ranks;
  schedule.elements = elements;
  switch (options.kind) {
    case CollectiveKind::kRing:
      detail::build_ring(schedule);
      break;
    case CollectiveKind::kTree:
      detail::build_tree(schedule);
      break;
    case CollectiveKind::kHalvingDoubling:
      detail::build_halving_doubling(schedule);
      break;
    case CollectiveKind::kDirect:
      detail::build_direct(schedule);
      break;
    case CollectiveKind::kHierarchical:
      detail::build_hierarchical(schedule, options.node_size);
      break;
    case CollectiveKind::kStragglar:
      detail::build_stragglar(schedule, options.straggler);
      break;
  }
  std::stable_sort(schedule.transfers.begin(),
                   schedule.transfers.end(),
                   [](const Transfer& a, const Transfer& b) { return a.round < b.round; });
  schedule.rounds = schedule.transfers.empty() ? 0 : schedule.transfers.back().round + 1;
  return schedule;
}

void complete_times(const Schedule& schedule,
                    const CollectiveOptions& options,
                    double bytes_per_element,
                    std::span<const double> ready,
                    std::span<double> completion) {
  const auto n = static_cast<std::size_t>(schedule.ranks);
  STRAGGLERSIM_ASSERT(ready.size() == n && completion.size() == n, "one time per rank");
  std::vector<double> end(ready.begin(), ready.end());
  std::vector<double> done(ready.begin(), ready.end());
  propagate<double, TimeOps>(schedule, options, bytes_per_element, end, done);
  std::copy(done.begin(), done.end(), completion.begin());
}

std::vector<double> completion_offsets(const Schedule& schedule,
                                       const CollectiveOptions& options,
                                       double bytes_per_element) {
  const auto n = static_cast<std::size_t>(schedule.ranks);
  std::vector<std::vector<double>> end(
      n, std::vector<double>(n, -std::numeric_limits<double>::infinity()));
  for (std::size_t i = 0; i < n; ++i) {
    end[i][i] = 0.0;
  }
  std::vector<std::vector<double>> done = end;
  propagate<std::vector<double>, OffsetOps>(schedule, options, bytes_per_element, end, done);
  std::vector<double> w(n, -std::numeric_limits<double>::infinity());
  for (const auto& row : done) {
    OffsetOps::max_into(w, row);
  }
  return w;
}

void execute(const Schedule& schedule, Eigen::MatrixXd& buffers) {
  STRAGGLERSIM_ASSERT(buffers.rows() == schedule.elements && buffers.cols() == schedule.ranks,
                      "one column of the schedule's length per rank");
  const auto& transfers = schedule.transfers;
  Eigen::VectorXd staged;
  std::vector<Eigen::Index> offset;
  std::size_t first = 0;
  while (first < transfers.size()) {
    std::size_t last = first;
    Eigen::Index total = 0;
    offset.clear();
    while (last < transfers.size() && transfers[last].round == transfers[first].round) {
      offset.push_back(total);
      total += transfers[last].end - transfers[last].begin;
      ++last;
    }
    // Every transfer of the round reads its sender as it was before the round.
    staged.resize(total);
    for (std::size_t t = first; t < last; ++t) {
      const Transfer& x = transfers[t];
      const Eigen::Index len = x.end - x.begin;
      staged.segment(offset[t - first], len) = buffers.col(x.source).segment(x.begin, len);
    }
    for (std::size_t t = first; t < last; ++t) {
      const Transfer& x = transfers[t];
      const Eigen::Index len = x.end - x.begin;
      auto target = buffers.col(x.destination).segment(x.begin, len);
      if (x.reduce) {
        target += staged.segment(offset[t - first], len);
      } else {
        target = staged.segment(offset[t - first], len);
      }
    }
    first = last;
  }
}

}  // namespace stragglersim::sim::collectives
