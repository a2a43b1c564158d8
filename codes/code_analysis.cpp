#include "codes/code_analysis.h"

#include <fmt/format.h>

#include <algorithm>
#include <boost/random/mersenne_twister.hpp>
#include <boost/random/uniform_int_distribution.hpp>
#include <cmath>
#include <limits>
#include <numeric>

#include "models/base/invariant.h"
#include "models/base/stop_request.h"

namespace stragglersim::codes {
namespace {

/// Heard set = complement of the (ascending) straggler set.
void complement(int workers, std::span<const int> stragglers, std::vector<int>& heard) {
  heard.clear();
  std::size_t next = 0;
  for (int i = 0; i < workers; ++i) {
    if (next < stragglers.size() && stragglers[next] == i) {
      ++next;
    } else {
      heard.push_back(i);
    }
  }
}

/// Linear-interpolated quantile of sorted values.
double quantile(const std::vector<double>& sorted, double q) {
  if (sorted.empty()) {
    return 0.0;
  }
  const double pos = q * static_cast<double>(sorted.size() - 1);
  const auto lo = static_cast<std::size_t>(std::floor(pos));
  const std::size_t hi = std::min(lo + 1, sorted.size() - 1);
  const double frac = pos - static_cast<double>(lo);
  return sorted[lo] + frac * (sorted[hi] - sorted[lo]);
}

struct Accumulator {
  std::vector<double> errors;
  std::vector<double> conditions;
  int exact = 0;
  double covered = 0.0;
  std::string first_problem;

  void add(const Decoding& d) {
    errors.push_back(d.error);
    conditions.push_back(d.condition);
    exact += d.exact ? 1 : 0;
    covered += d.partitions_covered;
    if (first_problem.empty() && !d.problem.empty()) {
      first_problem = d.problem;
    }
  }

  DecoderSummary summary(std::string name) {
    DecoderSummary s;
    s.decoder = std::move(name);
    s.patterns = static_cast<int>(errors.size());
    s.exact = exact;
    s.first_problem = first_problem;
    if (errors.empty()) {
      return s;
    }
    const auto count = static_cast<double>(errors.size());
    s.mean_error = std::accumulate(errors.begin(), errors.end(), 0.0) / count;
    double ss = 0.0;
    for (const double e : errors) {
      ss += (e - s.mean_error) * (e - s.mean_error);
    }
    s.sd_error = errors.size() > 1 ? std::sqrt(ss / (count - 1.0)) : 0.0;
    s.mean_partitions_covered = covered / count;
    std::sort(errors.begin(), errors.end());
    std::sort(conditions.begin(), conditions.end());
    s.min_error = errors.front();
    s.max_error = errors.back();
    s.median_error = quantile(errors, 0.5);
    s.p90_error = quantile(errors, 0.9);
    s.median_condition = quantile(conditions, 0.5);
    s.max_condition = conditions.back();
    return s;
  }
};

}  // namespace

std::int64_t binomial(int n, int m) {
  if (m < 0 || m > n) {
    return 0;
  }
  m = std::min(m, n - m);
  std::int64_t c = 1;
  for (int i = 1; i <= m; ++i) {
    // c · (n − m + i) / i stays an integer at every step; guard the multiplication.
    const std::int64_t factor = n - m + i;
    if (c > std::numeric_limits<std::int64_t>::max() / factor) {
      return std::numeric_limits<std::int64_t>::max();
    }
    c = c * factor / i;
  }
  return c;
}

bool for_each_straggler_pattern(int workers,
                                int stragglers,
                                std::int64_t exhaustive_limit,
                                int samples,
                                std::uint64_t seed,
                                const std::function<void(std::span<const int>)>& visit) {
  STRAGGLERSIM_ASSERT(workers >= 1 && stragglers >= 0 && stragglers <= workers,
                      "straggler count out of range");
  std::vector<int> heard;
  std::vector<int> chosen(static_cast<std::size_t>(stragglers));
  const auto s = static_cast<std::size_t>(stragglers);
  if (binomial(workers, stragglers) <= exhaustive_limit) {
    std::iota(chosen.begin(), chosen.end(), 0);
    while (true) {
      complement(workers, chosen, heard);
      visit(heard);
      // Next combination in lexicographic order.
      std::size_t t = s;
      while (t > 0 && chosen[t - 1] == workers - static_cast<int>(s - t + 1)) {
        --t;
      }
      if (t == 0) {
        return true;
      }
      ++chosen[t - 1];
      for (std::size_t u = t; u < s; ++u) {
        chosen[u] = chosen[u - 1] + 1;
      }
    }
  }
  STRAGGLERSIM_ASSERT(samples >= 1, "at least one sample needed");
  boost::random::mt19937_64 engine(seed);
  std::vector<int> order(static_cast<std::size_t>(workers));
  for (int rep = 0; rep < samples; ++rep) {
    std::iota(order.begin(), order.end(), 0);
    // Partial Fisher–Yates: the first s entries are a uniform random s-subset.
    for (std::size_t t = 0; t < s; ++t) {
      boost::random::uniform_int_distribution<std::size_t> pick(t, order.size() - 1);
      std::swap(order[t], order[pick(engine)]);
    }
    std::copy_n(order.begin(), s, chosen.begin());
    std::sort(chosen.begin(), chosen.end());
    complement(workers, chosen, heard);
    visit(heard);
  }
  return false;
}

std::string assignment_csv(const GradientCode& code) {
  std::string out = "worker";
  for (int j = 0; j < code.partitions(); ++j) {
    out += fmt::format(",p{}", j);
  }
  out += '\n';
  // From the supports, so codes whose dense B is not materialised can still be printed.
  std::vector<double> row(static_cast<std::size_t>(code.partitions()));
  for (int i = 0; i < code.workers(); ++i) {
    std::fill(row.begin(), row.end(), 0.0);
    const auto support = code.support(i);
    const auto values = code.support_values(i);
    for (std::size_t c = 0; c < support.size(); ++c) {
      row[static_cast<std::size_t>(support[c])] = values[c];
    }
    out += fmt::format("{}", i);
    for (const double x : row) {
      out += fmt::format(",{}", x);
    }
    out += '\n';
  }
  return out;
}

CodeReport analyse_code(const GradientCode& code, const CodeReportOptions& options) {
  const int n = code.workers();
  int stragglers = options.stragglers < 0 ? code.stragglers_tolerated() : options.stragglers;
  if (options.wait_for > 0) {
    STRAGGLERSIM_ASSERT(options.wait_for <= n, "wait_for exceeds the number of workers");
    stragglers = n - options.wait_for;
  }
  STRAGGLERSIM_ASSERT(stragglers >= 0 && stragglers <= n, "straggler count out of range");

  CodeReport report;
  report.code = code.name();
  report.workers = n;
  report.partitions = code.partitions();
  report.stragglers_tolerated = code.stragglers_tolerated();
  report.stragglers = stragglers;
  report.heard = n - stragglers;
  report.seed = options.seed;
  report.loads = code.loads();
  report.min_load = *std::min_element(report.loads.begin(), report.loads.end());
  report.max_load = *std::max_element(report.loads.begin(), report.loads.end());
  report.mean_load =
      std::accumulate(report.loads.begin(), report.loads.end(), 0.0) / static_cast<double>(n);
  if (options.include_assignment) {
    report.assignment_csv = assignment_csv(code);
  }

  Accumulator optimal;
  Accumulator one_step;
  Accumulator exact;
  report.exhaustive = for_each_straggler_pattern(n,
                                                 stragglers,
                                                 options.exhaustive_limit,
                                                 options.samples,
                                                 options.seed,
                                                 [&](std::span<const int> heard) {
                                                   models::throw_if_stop_requested();
                                                   optimal.add(code.decode_optimal(heard));
                                                   one_step.add(code.decode_one_step(heard));
                                                   exact.add(code.decode_exact(heard));
                                                   ++report.patterns;
                                                 });
  report.decoders.push_back(optimal.summary("optimal"));
  report.decoders.push_back(one_step.summary("one_step"));
  report.decoders.push_back(exact.summary("exact"));
  return report;
}

StabilityRow measure_stability(const GradientCode& code,
                               int stragglers,
                               int patterns,
                               std::uint64_t seed) {
  StabilityRow row;
  row.code = code.name();
  row.workers = code.workers();
  row.stragglers = stragglers;
  std::vector<double> conditions;
  // Never exhaustive: the study is about large n, where only sampling is affordable.
  for_each_straggler_pattern(
      code.workers(), stragglers, 0, patterns, seed, [&](std::span<const int> heard) {
        const Decoding d = code.decode_exact(heard);
        ++row.patterns;
        row.max_residual = std::max(row.max_residual, d.error);
        conditions.push_back(d.condition);
        if (!d.exact) {
          ++row.refused;
          if (row.first_problem.empty()) {
            row.first_problem = d.problem;
          }
        }
      });
  std::sort(conditions.begin(), conditions.end());
  row.median_condition = quantile(conditions, 0.5);
  row.max_condition = conditions.empty() ? 1.0 : conditions.back();
  std::vector<int> burst;
  for (int i = stragglers; i < code.workers(); ++i) {
    burst.push_back(i);
  }
  const Decoding d = code.decode_exact(burst);
  row.burst_residual = d.error;
  row.burst_condition = d.condition;
  row.burst_exact = d.exact;
  return row;
}

}  // namespace stragglersim::codes
