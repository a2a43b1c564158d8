// The per-worker files of a run (experiments/run_workers.h): workers.csv (each worker's part in
// the updates), worker_times.csv (measured compute times) and heard.csv (real against simulated
// heard sets).

#include "experiments/run_workers.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <iterator>
#include <limits>
#include <numeric>
#include <string>
#include <vector>

#include "experiments/run_output.h"

namespace stragglersim::experiments {

void WorkerTally::resize(int workers) {
  const auto n = static_cast<std::size_t>(workers);
  heard.assign(n, 0);
  used.assign(n, 0);
  rows.assign(n, 0);
  staleness_sum.assign(n, 0.0);
  staleness_max.assign(n, 0);
  collective_seconds_sum.assign(n, 0.0);
  collective_iterations = 0;
  arrived_last.assign(n, 0);
}

void WorkerTally::add(const sim::TraceRow& row) {
  for (const int w : row.heard) {
    ++heard[static_cast<std::size_t>(w)];
  }
  for (std::size_t l = 0; l < row.used.size(); ++l) {
    const auto w = static_cast<std::size_t>(row.used[l]);
    ++used[w];
    if (l < row.used_staleness.size()) {
      staleness_sum[w] += static_cast<double>(row.used_staleness[l]);
      staleness_max[w] = std::max(staleness_max[w], row.used_staleness[l]);
    }
  }
  for (std::size_t w = 0; w < row.worker_rows.size(); ++w) {
    rows[w] += row.worker_rows[w];
  }
  if (!row.collective_seconds.empty()) {
    ++collective_iterations;
    for (std::size_t w = 0; w < row.collective_seconds.size(); ++w) {
      collective_seconds_sum[w] += row.collective_seconds[w];
    }
  }
  if (row.arrived_last) {
    ++arrived_last[static_cast<std::size_t>(*row.arrived_last)];
  }
}

std::uint64_t WorkerTally::total_used() const {
  return std::accumulate(used.begin(), used.end(), std::uint64_t{0});
}

std::string WorkerTally::csv(bool with_rows, bool with_staleness, bool with_collective) const {
  fmt::memory_buffer out;
  fmt::format_to(std::back_inserter(out),
                 "worker,heard,used,share{}{}{}\n",
                 with_rows ? ",rows" : "",
                 with_staleness ? ",staleness_mean,staleness_max" : "",
                 with_collective ? ",collective_seconds_mean,arrived_last" : "");
  const std::uint64_t total = total_used();
  for (std::size_t w = 0; w < used.size(); ++w) {
    fmt::format_to(std::back_inserter(out), "{},{},{},", w, heard[w], used[w]);
    if (total > 0) {
      fmt::format_to(
          std::back_inserter(out), "{}", static_cast<double>(used[w]) / static_cast<double>(total));
    }
    if (with_rows) {
      fmt::format_to(std::back_inserter(out), ",{}", rows[w]);
    }
    if (with_staleness) {
      out.push_back(',');
      if (used[w] > 0) {
        fmt::format_to(std::back_inserter(out),
                       "{},{}",
                       staleness_sum[w] / static_cast<double>(used[w]),
                       staleness_max[w]);
      } else {
        out.push_back(',');
      }
    }
    if (with_collective) {
      out.push_back(',');
      if (collective_iterations > 0) {
        fmt::format_to(std::back_inserter(out),
                       "{}",
                       collective_seconds_sum[w] / static_cast<double>(collective_iterations));
      }
      fmt::format_to(std::back_inserter(out), ",{}", arrived_last[w]);
    }
    out.push_back('\n');
  }
  return {out.data(), out.size()};
}

std::string worker_times_csv(const std::vector<sim::WorkerTime>& times,
                             std::uint64_t iterations,
                             int workers) {
  const auto n = static_cast<std::size_t>(workers);
  std::vector<double> grid(static_cast<std::size_t>(iterations) * n,
                           std::numeric_limits<double>::quiet_NaN());
  for (const auto& t : times) {
    if (t.iteration >= 1 && t.iteration <= iterations) {
      grid[static_cast<std::size_t>(t.iteration - 1) * n + static_cast<std::size_t>(t.worker)] =
          t.seconds;
    }
  }
  fmt::memory_buffer out;
  fmt::format_to(std::back_inserter(out), "iteration,worker,seconds\n");
  for (std::size_t k = 0; k < grid.size(); ++k) {
    fmt::format_to(std::back_inserter(out), "{},{},", k / n + 1, k % n);
    if (!std::isnan(grid[k])) {
      fmt::format_to(std::back_inserter(out), "{}", grid[k]);
    }
    out.push_back('\n');
  }
  return {out.data(), out.size()};
}

std::string heard_csv(const std::vector<sim::ThreadedIterationRecord>& records) {
  fmt::memory_buffer out;
  fmt::format_to(std::back_inserter(out),
                 "iteration,same_set,near_tie_gap,real_iteration_time,iteration_time,heard,"
                 "simulated_heard\n");
  for (const auto& r : records) {
    fmt::format_to(std::back_inserter(out),
                   "{},{},{},{},{},{},{}\n",
                   r.iteration,
                   r.same_set ? 1 : 0,
                   r.near_tie_gap,
                   r.real_stop_seconds,
                   r.simulated_stop,
                   fmt::join(r.heard, " "),
                   fmt::join(r.simulated_heard, " "));
  }
  return {out.data(), out.size()};
}

std::string collective_csv(const std::vector<sim::ThreadedIterationRecord>& records) {
  if (records.empty() || records.front().collective_seconds.empty()) {
    return {};
  }
  fmt::memory_buffer out;
  fmt::format_to(std::back_inserter(out), "iteration,rank,compute_seconds,collective_seconds\n");
  for (const auto& r : records) {
    for (std::size_t w = 0; w < r.collective_seconds.size(); ++w) {
      fmt::format_to(std::back_inserter(out), "{},{},", r.iteration, w);
      if (std::isfinite(r.compute_seconds[w])) {
        fmt::format_to(std::back_inserter(out), "{}", r.compute_seconds[w]);
      }
      fmt::format_to(std::back_inserter(out), ",{}\n", r.collective_seconds[w]);
    }
  }
  return {out.data(), out.size()};
}

}  // namespace stragglersim::experiments
