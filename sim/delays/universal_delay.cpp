#include "sim/delays/universal_delay.h"

#include <fmt/format.h>

#include <algorithm>
#include <boost/random/exponential_distribution.hpp>
#include <boost/random/uniform_real_distribution.hpp>
#include <cmath>
#include <fstream>
#include <limits>

#include "fit/csv_fields.h"
#include "fit/delay_trace.h"
#include "models/base/invariant.h"

namespace stragglersim::sim {

namespace {

constexpr double kInfinity = std::numeric_limits<double>::infinity();

[[noreturn]] void fail(const std::string& path, std::int64_t line, const std::string& message) {
  throw TraceFileError(fmt::format("{}:{}: {}", path, line, message));
}

struct PowerRow {
  double time;
  double power;
  std::int64_t line;
};

/// The header's columns time, worker and power, in any order; their number needed per row.
struct PowerHeader {
  std::size_t time = 0;
  std::size_t worker = 0;
  std::size_t power = 0;
  std::size_t needed = 0;
};

PowerHeader read_power_header(const std::string& path, const std::string& line) {
  const std::vector<std::string> fields = split_csv_fields(line);
  std::optional<std::size_t> time;
  std::optional<std::size_t> worker;
  std::optional<std::size_t> power;
  for (std::size_t j = 0; j < fields.size(); ++j) {
    if (fields[j] == "time") time = j;
    if (fields[j] == "worker") worker = j;
    if (fields[j] == "power") power = j;
  }
  if (!time || !worker || !power) {
    fail(path,
         1,
         fmt::format("header has no '{}' column; got '{}' (expected a header with columns "
                     "time,worker,power)",
                     !time     ? "time"
                     : !worker ? "worker"
                               : "power",
                     trim_field(line)));
  }
  return {*time, *worker, *power, 1 + std::max({*time, *worker, *power})};
}

/// A number ≥ 0 and finite, or a TraceFileError naming `what`.
double non_negative(const std::string& path,
                    std::int64_t line,
                    const std::string& token,
                    const char* what) {
  const auto value = parse_csv_number(token);
  if (!value || !std::isfinite(*value)) {
    fail(path,
         line,
         fmt::format("malformed {}; got '{}' (expected a finite number >= 0)", what, token));
  }
  if (*value < 0.0) {
    fail(path, line, fmt::format("negative {}; got {} (expected a number >= 0)", what, token));
  }
  return *value;
}

/// The stationary law π of the generator with off-diagonal rates `q` (πQ = 0, Σπ = 1), by
/// Gaussian elimination with partial pivoting on Qᵀ with its last equation replaced by Σπ = 1.
std::vector<double> stationary_law(const std::vector<std::vector<double>>& q) {
  const std::size_t m = q.size();
  std::vector<std::vector<double>> a(m, std::vector<double>(m + 1, 0.0));
  for (std::size_t b = 0; b < m; ++b) {
    for (std::size_t s = 0; s < m; ++s) {
      if (s != b) {
        a[b][s] = q[s][b];   // inflow into b from s
        a[b][b] -= q[b][s];  // outflow from b
      }
    }
  }
  for (std::size_t s = 0; s < m; ++s) {
    a[m - 1][s] = 1.0;
  }
  a[m - 1][m] = 1.0;
  for (std::size_t c = 0; c < m; ++c) {
    std::size_t pivot = c;
    for (std::size_t r = c + 1; r < m; ++r) {
      if (std::abs(a[r][c]) > std::abs(a[pivot][c])) pivot = r;
    }
    std::swap(a[c], a[pivot]);
    for (std::size_t r = 0; r < m; ++r) {
      if (r != c && a[r][c] != 0.0) {
        const double f = a[r][c] / a[c][c];
        for (std::size_t k = c; k <= m; ++k) {
          a[r][k] -= f * a[c][k];
        }
      }
    }
  }
  std::vector<double> pi(m);
  for (std::size_t s = 0; s < m; ++s) {
    pi[s] = std::max(0.0, a[s][m] / a[s][s]);  // clamps rounding below 0
  }
  return pi;
}

/// Whether every state reaches every other through positive rates.
bool irreducible(const std::vector<std::vector<double>>& q) {
  const std::size_t m = q.size();
  for (const bool forward : {true, false}) {
    std::vector<char> seen(m, 0);
    std::vector<std::size_t> stack = {0};
    seen[0] = 1;
    while (!stack.empty()) {
      const std::size_t a = stack.back();
      stack.pop_back();
      for (std::size_t b = 0; b < m; ++b) {
        const double rate = forward ? q[a][b] : q[b][a];
        if (b != a && rate > 0.0 && seen[b] == 0) {
          seen[b] = 1;
          stack.push_back(b);
        }
      }
    }
    if (std::count(seen.begin(), seen.end(), 1) != static_cast<std::ptrdiff_t>(m)) {
      return false;
    }
  }
  return true;
}

/// The chain's off-diagonal rates: `rates`, or switch_rate spread evenly over the other states.
std::vector<std::vector<double>> rate_matrix(const PowerChain& chain) {
  if (!chain.rates.empty()) {
    return chain.rates;
  }
  const std::size_t m = chain.powers.size();
  const double each = m > 1 ? chain.switch_rate / static_cast<double>(m - 1) : 0.0;
  std::vector<std::vector<double>> q(m, std::vector<double>(m, each));
  for (std::size_t a = 0; a < m; ++a) {
    q[a][a] = 0.0;
  }
  return q;
}

std::vector<double> cumulative(const std::vector<double>& weights) {
  std::vector<double> out(weights.size());
  double sum = 0.0;
  for (std::size_t k = 0; k < weights.size(); ++k) {
    sum += weights[k];
    out[k] = sum;
  }
  for (double& c : out) {
    c /= sum;
  }
  return out;
}

}  // namespace

namespace {

/// The rows of a power file per worker, each checked; `period` the largest time.
std::vector<std::vector<PowerRow>> read_power_rows(const std::string& path,
                                                   int workers,
                                                   double& period) {
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    fail(path, 0, "cannot open the power file");
  }
  std::string line;
  if (!std::getline(in, line)) {
    fail(path, 1, "empty file (expected a header with columns time,worker,power)");
  }
  const PowerHeader header = read_power_header(path, line);
  std::vector<std::vector<PowerRow>> rows(static_cast<std::size_t>(std::max(workers, 0)));
  std::int64_t number = 1;
  bool any = false;
  period = 0.0;
  while (std::getline(in, line)) {
    ++number;
    if (trim_field(line).empty()) continue;
    const std::vector<std::string> fields = split_csv_fields(line);
    if (fields.size() < header.needed) {
      fail(
          path,
          number,
          fmt::format(
              "{} fields; expected at least {} (time,worker,power)", fields.size(), header.needed));
    }
    const auto worker = parse_csv_index(fields[header.worker]);
    if (!worker || *worker >= workers) {
      fail(path,
           number,
           fmt::format("worker '{}' out of range (expected an integer in [0, {}]: the run's "
                       "workers)",
                       fields[header.worker],
                       workers - 1));
    }
    const double time = non_negative(path, number, fields[header.time], "time");
    const double power = non_negative(path, number, fields[header.power], "power");
    rows[static_cast<std::size_t>(*worker)].push_back({time, power, number});
    period = std::max(period, time);
    any = true;
  }
  if (!any) {
    fail(path, 0, "no data rows (expected a row per worker at time 0 at least)");
  }
  if (!(period > 0.0)) {
    fail(path, 0, "every time is 0 (expected the largest time, the period, > 0)");
  }
  return rows;
}

/// Worker w's trace over [0, period) from its rows (sorted here), checked.
PowerTrace trace_of(const std::string& path,
                    std::size_t w,
                    std::vector<PowerRow>& r,
                    double period) {
  std::stable_sort(
      r.begin(), r.end(), [](const PowerRow& a, const PowerRow& b) { return a.time < b.time; });
  for (std::size_t k = 1; k < r.size(); ++k) {
    if (r[k].time == r[k - 1].time) {
      fail(path,
           std::max(r[k].line, r[k - 1].line),
           fmt::format(
               "duplicate time {} for worker {} (expected one power per time)", r[k].time, w));
    }
  }
  if (r.empty() || r.front().time != 0.0) {
    fail(path,
         0,
         fmt::format("worker {} has no row at time 0 (expected every worker's power from time 0)",
                     w));
  }
  PowerTrace trace;
  trace.period = period;
  double work = 0.0;
  for (std::size_t k = 0; k < r.size() && r[k].time < period; ++k) {
    trace.start.push_back(r[k].time);
    trace.power.push_back(r[k].power);
    const double end = k + 1 < r.size() ? r[k + 1].time : period;
    work += r[k].power * (end - r[k].time);
  }
  if (!(work > 0.0)) {
    fail(path,
         0,
         fmt::format("worker {} has power 0 over the whole period (expected some power > 0, or "
                     "its computations never end)",
                     w));
  }
  return trace;
}

/// A draw of the index whose cumulative probability first exceeds a uniform number (nothing
/// drawn for a single index).
int draw_index(const std::vector<double>& cumulative, RandomEngine& rng) {
  if (cumulative.size() == 1) {
    return 0;  // one state: nothing to draw
  }
  boost::random::uniform_real_distribution<double> u(0.0, 1.0);
  const double x = u(rng);
  const auto k = std::upper_bound(cumulative.begin(), cumulative.end(), x) - cumulative.begin();
  // Rounding of the last cumulative value below 1 cannot push the index out of range.
  return static_cast<int>(
      std::min<std::ptrdiff_t>(k, static_cast<std::ptrdiff_t>(cumulative.size()) - 1));
}

}  // namespace

PowerFile read_power_file(const std::string& path, int workers) {
  double period = 0.0;
  std::vector<std::vector<PowerRow>> rows = read_power_rows(path, workers, period);
  PowerFile file{path, {}};
  file.workers.reserve(rows.size());
  for (std::size_t w = 0; w < rows.size(); ++w) {
    file.workers.push_back(trace_of(path, w, rows[w], period));
  }
  return file;
}

Validation PowerChain::validate() const {
  const std::size_t m = powers.size();
  if (m == 0) {
    return Violation{
        "powers", "no state", "a non-empty array of powers >= 0", Violation::Got::kSize};
  }
  for (std::size_t a = 0; a < m; ++a) {
    if (!(powers[a] >= 0.0) || !std::isfinite(powers[a])) {
      return Violation{fmt::format("powers/{}", a), "out of range", "a number >= 0"};
    }
  }
  if (std::none_of(powers.begin(), powers.end(), [](double p) { return p > 0.0; })) {
    return Violation{
        "powers", "every power is 0", "some state with power > 0 (or computations never end)"};
  }
  if (rates.empty()) {
    return options_check::positive("switch_rate", switch_rate);
  }
  const std::string square = fmt::format("an array of {} arrays of {} rates >= 0", m, m);
  if (rates.size() != m) {
    return Violation{"rates", "wrong shape", square, Violation::Got::kSize};
  }
  for (std::size_t a = 0; a < m; ++a) {
    if (rates[a].size() != m) {
      return Violation{fmt::format("rates/{}", a), "wrong shape", square, Violation::Got::kSize};
    }
    for (std::size_t b = 0; b < m; ++b) {
      if (b != a && (!(rates[a][b] >= 0.0) || !std::isfinite(rates[a][b]))) {
        return Violation{fmt::format("rates/{}/{}", a, b), "out of range", "a rate >= 0"};
      }
    }
  }
  if (m > 1) {
    for (std::size_t a = 0; a < m; ++a) {
      double exit = 0.0;
      for (std::size_t b = 0; b < m; ++b) {
        exit += b != a ? rates[a][b] : 0.0;
      }
      if (!(exit > 0.0)) {
        return Violation{fmt::format("rates/{}", a),
                         "a state that is never left",
                         "some rate > 0 out of every state"};
      }
    }
    if (!irreducible(rates)) {
      return Violation{"rates",
                       "not irreducible",
                       "rates through which every state reaches every other (one stationary law)"};
    }
  }
  return std::nullopt;
}

Validation UniversalDelay::Options::validate(std::size_t workers) const {
  if ((trace != nullptr) == chain.has_value()) {
    return Violation{"powers", "not exactly one power source", "\"powers\" or \"markov\""};
  }
  if (trace != nullptr && trace->workers.size() != workers) {
    return Violation{
        "powers", "wrong number of workers", fmt::format("a power file of {} workers", workers)};
  }
  if (chain) {
    if (Validation v = chain->validate()) {
      v->field = "markov/" + v->field;
      return v;
    }
  }
  if (speeds.empty()) {
    return std::nullopt;
  }
  const std::string expected =
      fmt::format("an array of {} numbers > 0 (one speed per worker) or \"sqrt\"", workers);
  if (speeds.size() != workers) {
    return Violation{"speeds", "wrong length", expected, Violation::Got::kSize};
  }
  for (std::size_t i = 0; i < workers; ++i) {
    if (!(speeds[i] > 0.0) || !std::isfinite(speeds[i])) {
      return Violation{fmt::format("speeds/{}", i), "speed not > 0", expected};
    }
  }
  return std::nullopt;
}

UniversalDelay::UniversalDelay(std::vector<double> loads, const Options& options)
    : trace_(options.trace) {
  if (const Validation v = options.validate(loads.size())) {
    STRAGGLERSIM_ASSERT(false, v->field + ": " + v->problem + "; expected " + v->expected);
  }
  work_.resize(loads.size());
  for (std::size_t i = 0; i < loads.size(); ++i) {
    STRAGGLERSIM_ASSERT(loads[i] >= 0.0, "loads must be non-negative");
    work_[i] = options.speeds.empty() ? loads[i] : loads[i] / options.speeds[i];
  }
  if (trace_) {
    for (const PowerTrace& t : trace_->workers) {
      std::vector<double> c(t.start.size() + 1, 0.0);
      for (std::size_t k = 0; k < t.start.size(); ++k) {
        const double end = k + 1 < t.start.size() ? t.start[k + 1] : t.period;
        c[k + 1] = c[k] + t.power[k] * (end - t.start[k]);
      }
      cumulative_work_.push_back(std::move(c));
    }
    return;
  }
  const PowerChain& chain = *options.chain;
  powers_ = chain.powers;
  const std::vector<std::vector<double>> q = rate_matrix(chain);
  const std::size_t m = powers_.size();
  exit_rate_.assign(m, 0.0);
  jump_cumulative_.resize(m);
  for (std::size_t a = 0; a < m; ++a) {
    std::vector<double> jump(m, 0.0);
    for (std::size_t b = 0; b < m; ++b) {
      if (b != a) {
        jump[b] = q[a][b];
        exit_rate_[a] += q[a][b];
      }
    }
    if (exit_rate_[a] > 0.0) {
      jump_cumulative_[a] = cumulative(jump);
    }
  }
  stationary_ = m == 1 ? std::vector<double>{1.0} : stationary_law(q);
  stationary_cumulative_ = cumulative(stationary_);
  paths_.resize(loads.size());
}

double UniversalDelay::draw_hold(int state, RandomEngine& rng) const {
  const double rate = exit_rate_[static_cast<std::size_t>(state)];
  if (rate <= 0.0) {
    return kInfinity;  // a chain of one state never moves
  }
  boost::random::exponential_distribution<double> hold(rate);
  return hold(rng);
}

void UniversalDelay::extend(Path& path, RandomEngine& rng) const {
  const Segment last = path.segments.back();
  const int next = draw_index(jump_cumulative_[static_cast<std::size_t>(last.state)], rng);
  path.segments.push_back({last.end + draw_hold(next, rng), next});
}

double UniversalDelay::trace_duration(std::size_t worker, double phase, double work) const {
  const PowerTrace& t = trace_->workers[worker];
  const std::vector<double>& c = cumulative_work_[worker];
  const double per_period = c.back();
  // The segment holding the phase, and the work done in this period before it.
  const auto j = static_cast<std::size_t>(std::upper_bound(t.start.begin(), t.start.end(), phase) -
                                          t.start.begin() - 1);
  const double done = c[j] + t.power[j] * (phase - t.start[j]);
  // The target A = done + work lies in period `whole` (0: this one) at r ∈ (0, per_period]; a
  // target on a period's boundary is reached at the end of that period's last work, not at the
  // next period's start (the first t with the integral equal to the load).
  const double target = done + work;
  double whole = std::floor(target / per_period);
  double r = target - whole * per_period;
  if (r <= 0.0) {
    whole -= 1.0;
    r += per_period;
  }
  // The first k with c[k + 1] ≥ r: segment k does the last of the work (its power is > 0,
  // since c rises across it).
  auto k = static_cast<std::size_t>(std::lower_bound(c.begin() + 1, c.end(), r) - c.begin() - 1);
  double end = 0.0;
  if (k >= t.start.size()) {
    end = t.period;  // r above the period's work by rounding
  } else {
    end = t.start[k] + (r - c[k]) / t.power[k];
  }
  return whole * t.period + (end - phase);
}

double UniversalDelay::chain_duration(std::size_t worker,
                                      double start,
                                      double work,
                                      RandomEngine& rng) {
  Path& path = paths_[worker];
  if (path.segments.empty()) {
    // Stationary from the worker's first computation: the law of the state then is π, and the
    // holding time left is Exp(exit rate) by memorylessness.
    const int state = draw_index(stationary_cumulative_, rng);
    path.from = start;
    path.segments.push_back({start + draw_hold(state, rng), state});
  }
  STRAGGLERSIM_ASSERT(start >= path.from,
                      "a worker's computations must start in non-decreasing order");
  while (path.segments.front().end <= start) {
    if (path.segments.size() == 1) {
      extend(path, rng);
    }
    path.from = path.segments.front().end;
    path.segments.pop_front();
  }
  double elapsed = 0.0;
  double at = start;
  for (std::size_t k = 0;; ++k) {
    if (k == path.segments.size()) {
      extend(path, rng);
    }
    const Segment seg = path.segments[k];
    const double power = powers_[static_cast<std::size_t>(seg.state)];
    const double span = seg.end - at;
    if (power > 0.0 && power * span >= work) {
      return elapsed + work / power;
    }
    work -= power * span;
    elapsed += span;
    at = seg.end;
  }
}

double UniversalDelay::fresh_chain_duration(double work, RandomEngine& rng) const {
  int state = draw_index(stationary_cumulative_, rng);
  double elapsed = 0.0;
  for (;;) {
    const double span = draw_hold(state, rng);
    const double power = powers_[static_cast<std::size_t>(state)];
    if (power > 0.0 && power * span >= work) {
      return elapsed + work / power;
    }
    work -= power * span;
    elapsed += span;
    state = draw_index(jump_cumulative_[static_cast<std::size_t>(state)], rng);
  }
}

double UniversalDelay::duration_at(int worker, double start, RandomEngine& rng) {
  const auto i = static_cast<std::size_t>(worker);
  STRAGGLERSIM_ASSERT(i < work_.size(), "worker out of range");
  if (work_[i] == 0.0) {
    return 0.0;  // nothing to compute (a worker holding no partition): no draw either
  }
  if (trace_) {
    const double period = trace_->workers[i].period;
    double phase = std::fmod(start, period);
    if (phase < 0.0) phase += period;
    return trace_duration(i, phase, work_[i]);
  }
  return chain_duration(i, start, work_[i], rng);
}

void UniversalDelay::sample_at(std::uint64_t /*iteration*/,
                               double start,
                               RandomEngine& rng,
                               std::span<double> out) {
  STRAGGLERSIM_ASSERT(out.size() == work_.size(), "output span must hold one delay per worker");
  for (std::size_t i = 0; i < out.size(); ++i) {
    out[i] = duration_at(static_cast<int>(i), start, rng);
  }
}

void UniversalDelay::sample(std::uint64_t /*iteration*/, RandomEngine& rng, std::span<double> out) {
  STRAGGLERSIM_ASSERT(out.size() == work_.size(), "output span must hold one delay per worker");
  for (std::size_t i = 0; i < out.size(); ++i) {
    if (work_[i] == 0.0) {
      out[i] = 0.0;
    } else if (trace_) {
      boost::random::uniform_real_distribution<double> phase(0.0, trace_->workers[i].period);
      out[i] = trace_duration(i, phase(rng), work_[i]);
    } else {
      out[i] = fresh_chain_duration(work_[i], rng);
    }
  }
}

const UniversalDelay::Marginal& UniversalDelay::marginal(int worker) const {
  const auto i = static_cast<std::size_t>(worker);
  // A chain's law depends on the worker only through its work: workers of equal work share one.
  const std::pair<std::size_t, double> key{trace_ ? i : 0, work_[i]};
  const std::lock_guard lock(marginal_mutex_);
  auto found = marginals_.find(key);
  if (found != marginals_.end()) {
    return found->second;
  }
  Marginal m;
  m.sorted.resize(kMarginalPoints);
  RandomEngine rng(kMarginalSeed);
  for (std::size_t k = 0; k < kMarginalPoints; ++k) {
    if (work_[i] == 0.0) {
      m.sorted[k] = 0.0;
    } else if (trace_) {
      const double period = trace_->workers[i].period;
      const double phase =
          (static_cast<double>(k) + 0.5) * period / static_cast<double>(kMarginalPoints);
      m.sorted[k] = trace_duration(i, phase, work_[i]);
    } else {
      m.sorted[k] = fresh_chain_duration(work_[i], rng);
    }
  }
  std::sort(m.sorted.begin(), m.sorted.end());
  m.atoms = m.sorted;
  m.atoms.erase(std::unique(m.atoms.begin(), m.atoms.end()), m.atoms.end());
  double sum = 0.0;
  for (const double d : m.sorted) sum += d;
  m.mean = sum / static_cast<double>(kMarginalPoints);
  double squares = 0.0;
  for (const double d : m.sorted) squares += (d - m.mean) * (d - m.mean);
  // The variance of the empirical law itself (divisor M), consistent with its cdf.
  m.variance = squares / static_cast<double>(kMarginalPoints);
  return marginals_.emplace(key, std::move(m)).first->second;
}

double UniversalDelay::cdf(int worker, double t) const {
  const Marginal& m = marginal(worker);
  const auto below = std::upper_bound(m.sorted.begin(), m.sorted.end(), t) - m.sorted.begin();
  return static_cast<double>(below) / static_cast<double>(m.sorted.size());
}

double UniversalDelay::mean(int worker) const { return marginal(worker).mean; }

double UniversalDelay::variance(int worker) const { return marginal(worker).variance; }

double UniversalDelay::lower_bound(int worker) const { return marginal(worker).sorted.front(); }

std::span<const double> UniversalDelay::atoms(int worker) const { return marginal(worker).atoms; }

}  // namespace stragglersim::sim
