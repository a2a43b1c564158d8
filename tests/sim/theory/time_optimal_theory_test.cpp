#include "sim/theory/time_optimal_theory.h"

#include <fmt/format.h>

#include <algorithm>
#include <catch2/catch.hpp>
#include <cmath>
#include <cstdint>
#include <functional>
#include <limits>
#include <random>
#include <vector>

#include "sim/delays/delay_model.h"
#include "sim/theory/update_time_theory.h"

namespace stragglersim::sim {
namespace {

// ---- Brute force over the fixed computation model ---------------------------------------------

/// t(B) as the minimum over every nonempty subset of workers (not only the prefixes of the sorted
/// order) of (B + |S|)/Σ_{i∈S} 1/τ_i.
double subset_equilibrium(const std::vector<double>& tau, std::int64_t batch) {
  const auto n = tau.size();
  double best = std::numeric_limits<double>::infinity();
  for (std::size_t mask = 1; mask < (std::size_t{1} << n); ++mask) {
    double rate = 0.0;
    double size = 0.0;
    for (std::size_t i = 0; i < n; ++i) {
      if ((mask >> i) & 1U) {
        rate += 1.0 / tau[i];
        size += 1.0;
      }
    }
    best = std::min(best, (static_cast<double>(batch) + size) / rate);
  }
  return best;
}

/// Completions of worker i by time t: the largest k with k·τ_i ≤ t, by counting.
std::int64_t completions_by(double tau, double t) {
  std::int64_t k = 0;
  while (static_cast<double>(k + 1) * tau <= t) {
    ++k;
  }
  return k;
}

/// Every candidate time k·τ_j (k ≤ limit) in increasing order.
std::vector<double> candidate_times(const std::vector<double>& tau, std::int64_t limit) {
  std::vector<double> times;
  for (const double t : tau) {
    for (std::int64_t k = 1; k <= limit; ++k) {
      times.push_back(static_cast<double>(k) * t);
    }
  }
  std::sort(times.begin(), times.end());
  return times;
}

/// min over the candidate times of those at which Σ_i (completions − skip)⁺ ≥ B.
double brute_collection(const std::vector<double>& tau, std::int64_t batch, int skip) {
  for (const double t : candidate_times(tau, batch + skip)) {
    std::int64_t total = 0;
    for (const double x : tau) {
      total += std::max<std::int64_t>(completions_by(x, t) - skip, 0);
    }
    if (total >= batch) {
      return t;
    }
  }
  return std::numeric_limits<double>::infinity();
}

double brute_malenia(const std::vector<double>& tau, std::int64_t s) {
  const double n = static_cast<double>(tau.size());
  for (const double t : candidate_times(tau, 8 * s + 1)) {
    double sum = 0.0;
    bool everyone = true;
    for (const double x : tau) {
      const auto b = completions_by(x, t);
      everyone = everyone && b >= 1;
      sum += b >= 1 ? 1.0 / static_cast<double>(b) : 0.0;
    }
    if (everyone && sum * static_cast<double>(s) <= n * n * (1.0 + 1e-12)) {
      return t;
    }
  }
  return std::numeric_limits<double>::infinity();
}

/// Every τ vector of 1 … 4 workers over a grid whose multiples are exact in binary, in every
/// order for up to 3 workers (the functions sort inside), ascending for 4.
std::vector<std::vector<double>> tau_grid() {
  const std::vector<double> values{0.5, 1.0, 1.5, 2.5, 4.0};
  std::vector<std::vector<double>> out;
  for (const double a : values) {
    out.push_back({a});
    for (const double b : values) {
      out.push_back({a, b});
      for (const double c : values) {
        out.push_back({a, b, c});
      }
    }
  }
  for (std::size_t a = 0; a < values.size(); ++a) {
    for (std::size_t b = a; b < values.size(); ++b) {
      for (std::size_t c = b; c < values.size(); ++c) {
        for (std::size_t d = c; d < values.size(); ++d) {
          out.push_back({values[a], values[b], values[c], values[d]});
        }
      }
    }
  }
  return out;
}

// ---- A direct event loop of the update rules (independent of the project's clock) ----------

struct LoopRule {
  bool ringmaster = false;
  std::int64_t batch = 1;  ///< Rennala B
  int max_delay = 0;       ///< Ringmaster R, 0 = ∞
  bool stop_stale = false;
};

/// The times of the first `updates` updates; draw(i) is worker i's next computation time. Ties go
/// to the lowest worker.
std::vector<double> run_loop(const LoopRule& rule,
                             int workers,
                             const std::function<double(int)>& draw,
                             int updates) {
  const auto n = static_cast<std::size_t>(workers);
  std::vector<double> finish(n);
  std::vector<std::int64_t> version(n, 0);
  for (std::size_t i = 0; i < n; ++i) {
    finish[i] = draw(static_cast<int>(i));
  }
  std::int64_t current = 0;
  std::int64_t collected = 0;
  std::vector<double> times;
  while (static_cast<int>(times.size()) < updates) {
    const auto i = static_cast<std::size_t>(
        std::distance(finish.begin(), std::min_element(finish.begin(), finish.end())));
    const double now = finish[i];
    bool updated = false;
    if (rule.ringmaster) {
      if (rule.max_delay == 0 || current - version[i] < rule.max_delay) {
        ++current;
        updated = true;
      }
    } else if (version[i] == current && ++collected == rule.batch) {
      ++current;
      collected = 0;
      updated = true;
    }
    finish[i] = now + draw(static_cast<int>(i));
    version[i] = current;
    if (updated) {
      times.push_back(now);
      for (std::size_t j = 0; j < n; ++j) {
        const bool stale = rule.ringmaster
                               ? (rule.max_delay > 0 && current - version[j] >= rule.max_delay)
                               : version[j] != current;
        if (j != i && rule.stop_stale && stale) {
          finish[j] = now + draw(static_cast<int>(j));
          version[j] = current;
        }
      }
    }
  }
  return times;
}

struct LoopEstimate {
  double mean = 0.0;
  double se = 0.0;
};

/// Mean time per update over `batches` batch means of `size` updates (after one warm-up batch).
LoopEstimate loop_long_run(const LoopRule& rule,
                           int workers,
                           const std::function<double(int)>& draw,
                           int batches,
                           int size) {
  const auto times = run_loop(rule, workers, draw, (batches + 1) * size);
  double sum = 0.0;
  double sum_sq = 0.0;
  for (int b = 1; b <= batches; ++b) {
    const double begin = times[static_cast<std::size_t>(b * size - 1)];
    const double end = times[static_cast<std::size_t>((b + 1) * size - 1)];
    const double mean = (end - begin) / static_cast<double>(size);
    sum += mean;
    sum_sq += mean * mean;
  }
  const double nb = batches;
  const double mean = sum / nb;
  return {mean, std::sqrt(std::max(sum_sq / nb - mean * mean, 0.0) / (nb - 1.0))};
}

/// Worker i draws Δ_i + scale_i·Exp(1).
std::function<double(int)> shifted_exponential_draw(const ShiftedExponentialWorkers& w,
                                                    std::mt19937_64& rng) {
  return [&w, &rng](int i) {
    std::exponential_distribution<double> exp(1.0);
    const auto k = static_cast<std::size_t>(i);
    return w.shift[k] + w.scale[k] * exp(rng);
  };
}

}  // namespace

TEST_CASE("time-optimal theory: t(B) and T*(B) match brute force, with t/2 <= T* <= T° <= 2t",
          "[sim][theory][async]") {
  int cases = 0;
  for (const auto& tau : tau_grid()) {
    for (std::int64_t b = 1; b <= 12; ++b) {
      INFO(fmt::format("tau {} B {}", fmt::join(tau, ","), b));
      const double t = equilibrium_time(tau, b);
      const double fresh = collection_time(tau, b);
      const double stale = collection_time(tau, b, 1);
      CHECK(t == Approx(subset_equilibrium(tau, b)).epsilon(1e-12));
      CHECK(fresh == brute_collection(tau, b, 0));
      CHECK(stale == brute_collection(tau, b, 1));
      CHECK(t / 2.0 <= fresh * (1.0 + 1e-12));
      CHECK(fresh <= t * (1.0 + 1e-12));
      CHECK(fresh <= stale);
      CHECK(stale <= equilibrium_time(tau, b, 2) * (1.0 + 1e-12));
      CHECK(equilibrium_time(tau, b, 2) <= 2.0 * t * (1.0 + 1e-12));
      ++cases;
    }
  }
  CHECK(cases == 12 * (5 + 25 + 125 + 70));
}

TEST_CASE("time-optimal theory: Malenia's stop time under fixed times matches brute force",
          "[sim][theory][async]") {
  for (const auto& tau : tau_grid()) {
    for (const std::int64_t s : {1, 2, 3, 5, 8, 13}) {
      INFO(fmt::format("tau {} S {}", fmt::join(tau, ","), s));
      CHECK(malenia_collection_time(tau, s) == brute_malenia(tau, s));
    }
  }
}

TEST_CASE("time-optimal theory: Rennala under fixed times, every update between T* and T°",
          "[sim][theory][async]") {
  const std::vector<std::vector<double>> cases{
      {1.0, 1.0, 1.0}, {0.7, 1.3, 2.9, 5.1}, {1.0, 1.5, 2.5, 4.0, 11.0}, {0.3, 0.31, 9.0}};
  for (const auto& tau : cases) {
    for (const std::int64_t b : {1, 2, 3, 7, 20}) {
      for (const bool stop : {false, true}) {
        INFO(fmt::format("tau {} B {} stop_stale {}", fmt::join(tau, ","), b, stop));
        const auto draw = [&tau](int i) { return tau[static_cast<std::size_t>(i)]; };
        const auto times =
            run_loop({.batch = b, .stop_stale = stop}, static_cast<int>(tau.size()), draw, 300);
        const auto p = predict_time_optimal(
            {.method = TimeOptimalMethod::kRennala, .batch = b, .stop_stale = stop}, tau);
        REQUIRE(p);
        CHECK(p->lower == collection_time(tau, b));
        CHECK(p->exact() == stop);
        CHECK(times[0] == Approx(p->lower).epsilon(1e-12));
        for (std::size_t k = 1; k < times.size(); ++k) {
          const double step = times[k] - times[k - 1];
          CHECK(step >= p->lower * (1.0 - 1e-9));
          CHECK(step <= p->upper * (1.0 + 1e-9));
        }
        REQUIRE(p->paper_bound);
        CHECK(p->upper <= *p->paper_bound * (1.0 + 1e-12));
      }
    }
  }
}

TEST_CASE("time-optimal theory: Ringmaster under fixed times, R updates within T° of R",
          "[sim][theory][async]") {
  const std::vector<std::vector<double>> cases{
      {1.0, 1.0, 1.0}, {0.7, 1.3, 2.9, 5.1}, {1.0, 1.5, 2.5, 4.0, 11.0}, {0.3, 0.31, 9.0, 40.0}};
  for (const auto& tau : cases) {
    const auto draw = [&tau](int i) { return tau[static_cast<std::size_t>(i)]; };
    const int n = static_cast<int>(tau.size());
    const double rate_bound = 1.0 / [&] {
      double r = 0.0;
      for (const double t : tau) {
        r += 1.0 / t;
      }
      return r;
    }();
    for (const int r : {1, 2, 3, 5, 9}) {
      for (const bool stop : {false, true}) {
        INFO(fmt::format("tau {} R {} stop {}", fmt::join(tau, ","), r, stop));
        const auto times =
            run_loop({.ringmaster = true, .max_delay = r, .stop_stale = stop}, n, draw, 3000);
        const auto ru = static_cast<std::size_t>(r);
        CHECK(times[ru - 1] <= collection_time(tau, r) * (1.0 + 1e-12));
        const double window = collection_time(tau, r, 1);
        for (std::size_t k = 0; k + ru < times.size(); ++k) {
          CHECK(times[k + ru] - times[k] <= window * (1.0 + 1e-9));
        }
        const auto p = predict_time_optimal(
            {.method = TimeOptimalMethod::kRingmaster, .max_delay = r, .stop_stale = stop}, tau);
        REQUIRE(p);
        CHECK(p->lower == Approx(rate_bound).epsilon(1e-12));
        CHECK(p->upper == Approx(window / r).epsilon(1e-12));
        // Whole windows of R updates: each takes at most T°(R).
        const std::size_t span = (2000 / ru) * ru;
        const double average = (times[999 + span] - times[999]) / static_cast<double>(span);
        // A span of L seconds holds at most Σ_i (L/τ_i + 1) arrivals.
        const double boundary = (static_cast<double>(span) - n) / static_cast<double>(span);
        CHECK(average >= p->lower * boundary * (1.0 - 1e-9));
        CHECK(average <= p->upper * (1.0 + 1e-9));
      }
    }
    // R = ∞: asynchronous SGD, every arrival an update, 1/Σ 1/τ_i in the long run.
    const auto times = run_loop({.ringmaster = true}, n, draw, 20000);
    const auto p = predict_time_optimal({.method = TimeOptimalMethod::kRingmaster}, tau);
    REQUIRE(p);
    CHECK(p->exact());
    const double average = (times.back() - times[9999]) / 10000.0;
    CHECK(average == Approx(p->lower).epsilon(0.01));
  }
}

TEST_CASE("time-optimal theory: MindFlayer under fixed times drops the workers past their cut-off",
          "[sim][theory][async]") {
  const std::vector<double> tau{1.0, 2.0, 3.0, 10.0};
  const auto p = predict_time_optimal({.method = TimeOptimalMethod::kMindFlayer,
                                       .batch = 6,
                                       .stop_stale = true,
                                       .cutoffs = {5.0, 2.0, 2.5, 50.0}},
                                      tau);
  REQUIRE(p);
  const std::vector<double> kept{1.0, 2.0, 10.0};
  CHECK(p->exact());
  CHECK(p->lower == collection_time(kept, 6));
  const auto none = predict_time_optimal(
      {.method = TimeOptimalMethod::kMindFlayer, .batch = 2, .cutoffs = {0.5, 1.0, 1.0, 1.0}}, tau);
  REQUIRE(none);
  CHECK(std::isinf(none->lower));
}

TEST_CASE(
    "time-optimal theory: the renewal integral agrees with K-batch-sync and with B/sum(lambda)",
    "[sim][theory][async]") {
  for (const int n : {1, 3, 6}) {
    for (int k = 1; k <= n; ++k) {
      for (const double shift : {0.0, 0.25, 1.0}) {
        const ShiftedExponentialWorkers w{std::vector<double>(static_cast<std::size_t>(n), shift),
                                          std::vector<double>(static_cast<std::size_t>(n), 0.5)};
        const auto reference =
            predict_update_time(UpdateDiscipline::kKBatchSync, n, k, shift, 2.0).expected;
        INFO(fmt::format("n {} K {} shift {}", n, k, shift));
        CHECK(renewal_collection_mean(w, k) == Approx(reference).epsilon(1e-9));
      }
    }
  }
  const ShiftedExponentialWorkers w{{0.0, 0.0, 0.0, 0.0}, {0.5, 1.0, 3.0, 0.2}};
  const double rate = 2.0 + 1.0 + 1.0 / 3.0 + 5.0;
  for (const std::int64_t b : {1, 2, 5, 13}) {
    CHECK(renewal_collection_mean(w, b) == Approx(static_cast<double>(b) / rate).epsilon(1e-9));
  }
}

TEST_CASE("time-optimal theory: the renewal integral matches Monte-Carlo to 4 standard errors",
          "[sim][theory][async]") {
  const ShiftedExponentialWorkers w{{0.2, 0.5, 0.0, 1.5}, {0.3, 1.0, 2.0, 0.1}};
  std::mt19937_64 rng(20260511);
  const auto draw = shifted_exponential_draw(w, rng);
  for (const std::int64_t b : {1, 3, 8, 24}) {
    // Fresh-start collection (Rennala with stop_stale): i.i.d. samples of the first update.
    const int reps = 20000;
    double sum = 0.0;
    double sum_sq = 0.0;
    for (int r = 0; r < reps; ++r) {
      const double t = run_loop({.batch = b, .stop_stale = true}, 4, draw, 1)[0];
      sum += t;
      sum_sq += t * t;
    }
    const double mean = sum / reps;
    const double se = std::sqrt((sum_sq / reps - mean * mean) / (reps - 1.0));
    const double theory = renewal_collection_mean(w, b);
    INFO(fmt::format("B {} theory {} sim {} se {}", b, theory, mean, se));
    CHECK(std::abs(mean - theory) <= 4.0 * se);
    // The long run of stop_stale is a renewal of that collection; without it the run lies between
    // the two integrals.
    const auto exact = predict_time_optimal(
        {.method = TimeOptimalMethod::kRennala, .batch = b, .stop_stale = true}, w);
    REQUIRE(exact);
    CHECK(exact->exact());
    const LoopEstimate renewal = loop_long_run({.batch = b, .stop_stale = true}, 4, draw, 40, 300);
    CHECK(std::abs(renewal.mean - exact->lower) <= 4.0 * renewal.se);
    const auto bounds =
        predict_time_optimal({.method = TimeOptimalMethod::kRennala, .batch = b}, w);
    REQUIRE(bounds);
    CHECK(bounds->upper == Approx(renewal_collection_mean(w, b, 1)).epsilon(1e-12));
    const LoopEstimate stale = loop_long_run({.batch = b}, 4, draw, 40, 300);
    INFO(fmt::format(
        "bounds {} {} sim {} se {}", bounds->lower, bounds->upper, stale.mean, stale.se));
    CHECK(stale.mean >= bounds->lower - 4.0 * stale.se);
    CHECK(stale.mean <= bounds->upper + 4.0 * stale.se);
  }
}

TEST_CASE("time-optimal theory: Ringmaster with random delays against a seeded event loop",
          "[sim][theory][async]") {
  std::mt19937_64 rng(99);
  // Δ > 0: R = ∞ is exact (each worker a renewal process of mean E[X_i]); finite R is above it.
  const ShiftedExponentialWorkers shifted{{0.2, 0.5, 0.0, 1.5}, {0.3, 1.0, 2.0, 0.1}};
  const auto draw = shifted_exponential_draw(shifted, rng);
  const auto async = predict_time_optimal({.method = TimeOptimalMethod::kRingmaster}, shifted);
  REQUIRE(async);
  CHECK(async->exact());
  const LoopEstimate a = loop_long_run({.ringmaster = true}, 4, draw, 40, 500);
  CHECK(std::abs(a.mean - async->lower) <= 4.0 * a.se);
  for (const bool stop : {false, true}) {
    const auto p = predict_time_optimal(
        {.method = TimeOptimalMethod::kRingmaster, .max_delay = 2, .stop_stale = stop}, shifted);
    REQUIRE(p);
    CHECK_FALSE(p->exact());
    const LoopEstimate e =
        loop_long_run({.ringmaster = true, .max_delay = 2, .stop_stale = stop}, 4, draw, 40, 500);
    CHECK(e.mean >= p->lower - 4.0 * e.se);
  }
  // Δ = 0 with computation stopping: Poisson arrivals, none discarded.
  const ShiftedExponentialWorkers exponential{{0.0, 0.0, 0.0}, {0.5, 1.0, 4.0}};
  const auto draw_exp = shifted_exponential_draw(exponential, rng);
  for (const int r : {1, 3}) {
    const auto p = predict_time_optimal(
        {.method = TimeOptimalMethod::kRingmaster, .max_delay = r, .stop_stale = true},
        exponential);
    REQUIRE(p);
    CHECK(p->exact());
    CHECK(p->lower == Approx(1.0 / (2.0 + 1.0 + 0.25)).epsilon(1e-12));
    const LoopEstimate e = loop_long_run(
        {.ringmaster = true, .max_delay = r, .stop_stale = true}, 3, draw_exp, 40, 500);
    INFO(fmt::format("R {} theory {} sim {} se {}", r, p->lower, e.mean, e.se));
    CHECK(std::abs(e.mean - p->lower) <= 4.0 * e.se);
  }
}

TEST_CASE(
    "time-optimal theory: MindFlayer with exponential delays is Rennala whatever the cut-offs",
    "[sim][theory][async]") {
  const ShiftedExponentialWorkers w{{0.0, 0.0, 0.0}, {0.5, 1.0, 4.0}};
  const std::vector<double> cutoffs{0.2, 3.0, 1.0};
  std::mt19937_64 rng(4242);
  const auto draw = shifted_exponential_draw(w, rng);
  // With stop_stale every attempt chain lies within one update: a worker's next gradient comes
  // after its cut attempts and the first one within its cut-off.
  const auto success = [&](int i) {
    const double cut = cutoffs[static_cast<std::size_t>(i)];
    double spent = 0.0;
    for (;;) {
      const double x = draw(i);
      if (x <= cut) {
        return spent + x;
      }
      spent += cut;
    }
  };
  for (const std::int64_t b : {1, 4}) {
    const auto p = predict_time_optimal({.method = TimeOptimalMethod::kMindFlayer,
                                         .batch = b,
                                         .stop_stale = true,
                                         .cutoffs = cutoffs},
                                        w);
    REQUIRE(p);
    CHECK(p->exact());
    CHECK(p->lower == Approx(static_cast<double>(b) / 3.25).epsilon(1e-12));
    const LoopEstimate e = loop_long_run({.batch = b, .stop_stale = true}, 3, success, 40, 300);
    INFO(fmt::format("B {} theory {} sim {} se {}", b, p->lower, e.mean, e.se));
    CHECK(std::abs(e.mean - p->lower) <= 4.0 * e.se);
  }
  CHECK_FALSE(predict_time_optimal(
      {.method = TimeOptimalMethod::kMindFlayer, .batch = 2, .cutoffs = cutoffs},
      ShiftedExponentialWorkers{{0.1, 0.0, 0.0}, {0.5, 1.0, 4.0}}));
}

TEST_CASE("time-optimal theory: the adapter reads a shifted-exponential delay model",
          "[sim][theory][async]") {
  const ShiftedExponentialDelay model({1.0, 2.0, 0.5}, {.shift = 0.5, .rate = 2.0});
  const auto w = shifted_exponential_workers(model);
  REQUIRE(w);
  REQUIRE(w->shift.size() == 3);
  for (int i = 0; i < 3; ++i) {
    const auto k = static_cast<std::size_t>(i);
    CHECK(w->shift[k] == model.worker_shift(i));
    CHECK(w->scale[k] == model.worker_scale(i));
  }
  const auto p = predict_time_optimal(
      {.method = TimeOptimalMethod::kRennala, .batch = 4, .stop_stale = true}, model);
  REQUIRE(p);
  CHECK(p->lower == Approx(renewal_collection_mean(*w, 4)).epsilon(1e-12));
  CHECK_FALSE(predict_time_optimal({.method = TimeOptimalMethod::kMindFlayer}, model));
}

}  // namespace stragglersim::sim
