#include "experiments/scheme_candidates.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <utility>

#include "experiments/config/aggregation_registry.h"

namespace stragglersim::experiments {
namespace {

SchemeCandidate candidate(std::string label,
                          nlohmann::json code,
                          nlohmann::json stopping,
                          const std::string& rescale = "none") {
  SchemeCandidate c;
  c.label = std::move(label);
  c.block = {{"code", std::move(code)}, {"stopping", std::move(stopping)}, {"rescale", rescale}};
  return c;
}

int fraction_of(int n, int numerator, int denominator) {
  return std::clamp((n * numerator + denominator - 1) / denominator, 1, n);
}

/// ErasureHead (FRC d = 2) with the adaptive rules of docs/model.md §4: an r never below n/2
/// that follows the arrival spread, and a deadline at median + 1 MAD of the recent arrivals;
/// both over a window of 10 iterations. And ErasureHead's r = n/2 with its groups re-formed every
/// 2 iterations (`dynamic_frc`, docs/model.md §5).
void add_adaptive_candidates(int n, std::vector<SchemeCandidate>& out) {
  if (n % 2 != 0 || n <= 2) {
    return;
  }
  const int r = fraction_of(n, 1, 2);
  out.push_back(candidate(fmt::format("erasurehead frc d=2 adaptive r>={}", r),
                          {{"kind", "frc"}, {"d", 2}},
                          {{"rule", "adaptive_r"}, {"window", 10}, {"r_min", r}, {"slack", 0.5}}));
  out.push_back(candidate("erasurehead frc d=2 adaptive deadline",
                          {{"kind", "frc"}, {"d", 2}},
                          {{"rule", "adaptive_deadline"}, {"window", 10}, {"mads", 1.0}}));
  out.push_back(candidate(fmt::format("erasurehead dynamic_frc d=2 r={} K=2", r),
                          {{"kind", "dynamic_frc"}, {"d", 2}, {"every", 2}},
                          {{"rule", "first_r_or_decodable"}, {"r", r}}));
  for (std::size_t i = out.size() - 3; i < out.size(); ++i) {
    out[i].adaptive = true;
  }
}

/// The baselines that do not code (docs/model.md §4): K-sync averages the first K gradients,
/// K-async updates after every K (stale) gradients, Anytime minibatch (with a deadline) computes
/// for that window.
void add_baseline_candidates(int n, double deadline, std::vector<SchemeCandidate>& out) {
  const int k = fraction_of(n, 1, 2);
  const std::size_t first_baseline = out.size();
  if (k < n) {
    out.push_back(candidate(fmt::format("k-sync K={}", k),
                            {{"kind", "uncoded"}},
                            {{"rule", "first_r"}, {"r", k}},
                            "empirical"));
  }
  out.push_back(candidate(
      fmt::format("k-async K={}", k), {{"kind", "uncoded"}}, {{"rule", "k_async"}, {"k", k}}));
  if (deadline > 0.0) {
    out.push_back(candidate(fmt::format("anytime window={:.4g}", deadline),
                            {{"kind", "uncoded"}},
                            {{"rule", "anytime"}, {"window", deadline}}));
  }
  for (std::size_t i = first_baseline; i < out.size(); ++i) {
    out[i].baseline = true;
  }
}

/// The time-optimal methods (docs/model.md §4), each at the parameter its paper's analysis points
/// to for a batch of n: Rennala and MindFlayer with B = n, Malenia with S = n, Ringmaster with
/// R = n (stopping stale computations), MindFlayer's cut-off the deadline candidate's wait (with
/// a deadline), and Rescaled ASGD. Every worker reads its own partition (the data-parallel
/// layout of every other candidate).
void add_time_optimal_candidates(int n, double deadline, std::vector<SchemeCandidate>& out) {
  const std::size_t first = out.size();
  const nlohmann::json uncoded = {{"kind", "uncoded"}};
  out.push_back(
      candidate(fmt::format("rennala B={}", n), uncoded, {{"rule", "rennala"}, {"batch", n}}));
  out.push_back(
      candidate(fmt::format("malenia S={}", n), uncoded, {{"rule", "malenia"}, {"batch", n}}));
  out.push_back(candidate(fmt::format("ringmaster R={}", n),
                          uncoded,
                          {{"rule", "ringmaster"}, {"max_delay", n}, {"stop_stale", true}}));
  if (deadline > 0.0) {
    out.push_back(candidate(fmt::format("mindflayer B={} cutoff={:.4g}", n, deadline),
                            uncoded,
                            {{"rule", "mindflayer"}, {"batch", n}, {"cutoffs", deadline}}));
  }
  out.push_back(candidate("rescaled asgd", uncoded, {{"rule", "rescaled_async"}}));
  for (std::size_t i = first; i < out.size(); ++i) {
    out[i].time_optimal = true;
  }
}

/// The persistent straggler the predicted delay names: the single worker of the largest
/// per-worker factor; nullopt without factors or with a tie for the largest.
std::optional<int> named_straggler(const nlohmann::json& delay) {
  if (!delay.is_object() || !delay.contains("factors") || !delay["factors"].is_array() ||
      delay["factors"].empty()) {
    return std::nullopt;
  }
  const std::vector<double> factors = delay["factors"].get<std::vector<double>>();
  const auto largest = std::max_element(factors.begin(), factors.end());
  if (std::count(factors.begin(), factors.end(), *largest) != 1) {
    return std::nullopt;
  }
  return static_cast<int>(largest - factors.begin());
}

/// StragglAR over the block's links when the block is not StragglAR's and the delay names a
/// straggler (n ≥ 3).
void add_stragglar_candidate(const nlohmann::json& aggregation,
                             int n,
                             const nlohmann::json& delay,
                             std::vector<SchemeCandidate>& out) {
  const auto straggler = named_straggler(delay);
  if (aggregation.value("kind", "") == "stragglar" || !straggler || n < 3 ||
      static_cast<int>(delay["factors"].size()) != n) {
    return;
  }
  nlohmann::json block = {{"kind", "stragglar"}, {"straggler", *straggler}};
  for (const char* key : {"latency", "bandwidth", "message_bytes"}) {
    if (aggregation.contains(key)) {
      block[key] = aggregation[key];
    }
  }
  SchemeCandidate c = candidate(fmt::format("stragglar: uncoded straggler={}", *straggler),
                                {{"kind", "uncoded"}},
                                {{"rule", "all"}});
  c.block["aggregation"] = std::move(block);
  c.aggregation = "stragglar";
  out.push_back(std::move(c));
}

/// Bounded-time and DropCompute over the collective, at `deadline` seconds.
void add_collective_deadline_candidates(const std::string& kind,
                                        int n,
                                        double deadline,
                                        std::vector<SchemeCandidate>& out) {
  out.push_back(candidate(fmt::format("{}: bounded-time deadline={:.4g}", kind, deadline),
                          {{"kind", "uncoded"}},
                          {{"rule", "deadline"}, {"after", deadline}},
                          "empirical"));
  SchemeCandidate drop =
      candidate(fmt::format("{}: drop_compute m=4 threshold={:.4g}", kind, deadline),
                {{"kind", "proportional"},
                 {"d", 1},
                 {"factors", std::vector<double>(static_cast<std::size_t>(n), 1.0)}},
                {{"rule", "drop_compute"}, {"threshold", deadline}},
                "empirical");
  drop.block["partitions"] = 4 * n;
  out.push_back(std::move(drop));
}

/// The evaluated candidate labelled `label`, or null (not a candidate, or not predicted).
const SchemeCandidate* predicted_candidate(const std::vector<SchemeCandidate>& candidates,
                                           const std::string& label) {
  for (const auto& c : candidates) {
    if (c.label == label && c.problem.empty()) {
      return &c;
    }
  }
  return nullptr;
}

}  // namespace

std::vector<SchemeCandidate> scheme_candidates(int workers, double deadline) {
  const int n = workers;
  std::vector<SchemeCandidate> out;
  out.push_back(candidate("uncoded", {{"kind", "uncoded"}}, {{"rule", "all"}}));
  for (const int r : {fraction_of(n, 3, 4), fraction_of(n, 1, 2)}) {
    if (r < n) {
      out.push_back(candidate(fmt::format("ignore-stragglers r={}", r),
                              {{"kind", "uncoded"}},
                              {{"rule", "first_r"}, {"r", r}}));
    }
  }
  for (const int d : {2, 3}) {
    if (n % d == 0 && n > d) {
      out.push_back(candidate(
          fmt::format("exact frc d={}", d), {{"kind", "frc"}, {"d", d}}, {{"rule", "decodable"}}));
    }
  }
  for (const int s : {1, 2}) {
    if (s < n) {
      out.push_back(candidate(
          fmt::format("crc s={}", s), {{"kind", "crc"}, {"s", s}}, {{"rule", "decodable"}}));
    }
  }
  // Multi-message (docs/model.md §4): the stragglers' partial work counts; exact. (On a cyclic
  // code every worker is in one component, whose exact sum has 2^n terms: not a candidate.)
  if (n % 2 == 0 && n > 2) {
    out.push_back(candidate(
        "multi_message frc d=2", {{"kind", "frc"}, {"d", 2}}, {{"rule", "multi_message"}}));
  }
  for (const int d : {2, 3}) {
    if (n % d != 0 || n <= d) {
      continue;
    }
    for (const int r : {fraction_of(n, 1, 4), fraction_of(n, 1, 2), fraction_of(n, 3, 4)}) {
      out.push_back(candidate(fmt::format("erasurehead frc d={} r={}", d, r),
                              {{"kind", "frc"}, {"d", d}},
                              {{"rule", "first_r_or_decodable"}, {"r", r}}));
    }
  }
  if (deadline > 0.0 && n % 2 == 0 && n > 2) {
    out.push_back(candidate(fmt::format("erasurehead frc d=2 deadline={:.4g}", deadline),
                            {{"kind", "frc"}, {"d", 2}},
                            {{"rule", "deadline"}, {"after", deadline}}));
  }
  for (const int d : {2, 3}) {
    if (d < n) {
      const int r = fraction_of(n, 1, 2);
      out.push_back(candidate(fmt::format("bgc d={} r={}", d, r),
                              {{"kind", "bgc"}, {"d", d}},
                              {{"rule", "first_r"}, {"r", r}}));
    }
  }
  add_adaptive_candidates(n, out);
  add_baseline_candidates(n, deadline, out);
  add_time_optimal_candidates(n, deadline, out);
  return out;
}

std::vector<SchemeCandidate> collective_candidates(const nlohmann::json& aggregation,
                                                   int workers,
                                                   double deadline,
                                                   const nlohmann::json& delay) {
  const int n = workers;
  const std::string kind = aggregation.value("kind", "");
  std::vector<SchemeCandidate> out;
  out.push_back(candidate(kind + ": uncoded", {{"kind", "uncoded"}}, {{"rule", "all"}}));
  for (const int r : {fraction_of(n, 3, 4), fraction_of(n, 1, 2)}) {
    if (r < n) {
      out.push_back(candidate(fmt::format("{}: backup workers r={}", kind, r),
                              {{"kind", "uncoded"}},
                              {{"rule", "first_r"}, {"r", r}},
                              "empirical"));
    }
  }
  for (const int d : {2, 3}) {
    if (n % d != 0 || n <= d) {
      continue;
    }
    const nlohmann::json frc = {{"kind", "frc"}, {"d", d}};
    out.push_back(
        candidate(fmt::format("{}: exact frc d={}", kind, d), frc, {{"rule", "decodable"}}));
    for (const int r : d == 2 ? std::vector<int>{fraction_of(n, 1, 2), fraction_of(n, 3, 4)}
                              : std::vector<int>{fraction_of(n, 1, 2)}) {
      out.push_back(candidate(fmt::format("{}: erasurehead frc d={} r={}", kind, d, r),
                              frc,
                              {{"rule", "first_r"}, {"r", r}}));
    }
  }
  if (deadline > 0.0) {
    add_collective_deadline_candidates(kind, n, deadline, out);
  }
  for (auto& c : out) {
    c.block["aggregation"] = aggregation;
    c.aggregation = kind;
  }
  add_stragglar_candidate(aggregation, n, delay, out);
  return out;
}

void on_parameter_server(SchemeCandidate& candidate, const nlohmann::json& aggregation) {
  nlohmann::json network = nlohmann::json::object();
  for (const char* key : {"latency", "bandwidth"}) {
    if (aggregation.contains(key)) {
      network[key] = aggregation[key];
    }
  }
  candidate.block["aggregation"] = {{"kind", kDefaultAggregation}};
  candidate.block["network"] = std::move(network);
  candidate.aggregation = kDefaultAggregation;
  candidate.label = kDefaultAggregation + ": " + candidate.label;
}

std::vector<SchemeCandidate> deadline_candidates(const std::vector<SchemeCandidate>& evaluated,
                                                 int workers,
                                                 const nlohmann::json& aggregation,
                                                 const nlohmann::json& predicted_delay) {
  const int n = workers;
  std::vector<SchemeCandidate> out;
  const bool collective = aggregation.is_object();
  const std::string prefix = collective ? kDefaultAggregation + ": " : std::string();
  const std::string anchor = fmt::format("erasurehead frc d=2 r={}", fraction_of(n, 1, 2));
  if (const SchemeCandidate* c = predicted_candidate(evaluated, prefix + anchor)) {
    for (auto& extra : scheme_candidates(n, c->iteration_time)) {
      if (extra.label.find("deadline=") != std::string::npos ||
          extra.label.starts_with("anytime") || extra.label.starts_with("mindflayer")) {
        if (collective) {
          on_parameter_server(extra, aggregation);
        }
        out.push_back(std::move(extra));
      }
    }
  }
  const std::string kind = collective ? aggregation.value("kind", "") : std::string();
  if (const SchemeCandidate* c =
          collective ? predicted_candidate(evaluated, kind + ": " + anchor) : nullptr) {
    const double tau = std::isfinite(c->stop_time) ? c->stop_time : c->iteration_time;
    for (auto& extra : collective_candidates(aggregation, n, tau, predicted_delay)) {
      if (extra.label.find("deadline=") != std::string::npos ||
          extra.label.find("threshold=") != std::string::npos) {
        out.push_back(std::move(extra));
      }
    }
  }
  return out;
}

nlohmann::json apply_candidate(const nlohmann::json& config, const SchemeCandidate& candidate) {
  nlohmann::json out = config;
  out["code"] = candidate.block["code"];
  out["stopping"] = candidate.block["stopping"];
  out["rescale"] = candidate.block["rescale"];
  out["stragglers"] = "cancel";
  if (candidate.block.contains("partitions")) {
    out["partitions"] = candidate.block["partitions"];
  } else if (out.contains("partitions")) {
    out.erase("partitions");  // each code's own k
  }
  for (const char* key : {"aggregation", "network"}) {
    if (candidate.block.contains(key)) {
      out[key] = candidate.block[key];
    }
  }
  if (candidate.block.contains("optimizer")) {  // a tuned step
    out["optimizer"]["step"] = candidate.block["optimizer"]["step"];
  }
  return out;
}

std::vector<SchemeCandidate> proportional_candidates(int workers, const nlohmann::json& delay) {
  std::vector<SchemeCandidate> out;
  const int n = workers;
  // A replayed trace's factors are its per-worker means over the fastest's ("factors": "delay").
  const bool trace = delay.is_object() && delay.value("kind", "") == "trace";
  const nlohmann::json factors =
      trace
          ? nlohmann::json("delay")
          : (delay.is_object() && delay.contains("factors") ? delay["factors"] : nlohmann::json());
  if (!(trace || factors.is_array()) || n <= 2) {
    return out;
  }
  // Loads in proportion to the delay's per-worker factors, at k = 4n (docs/model.md §5: with
  // k = n the shares round to FRC's and to CRC's).
  if (n % 2 == 0) {
    const nlohmann::json code = {{"kind", "proportional"}, {"d", 2}, {"factors", factors}};
    out.push_back(candidate("exact proportional d=2 k=4n", code, {{"rule", "decodable"}}));
    const int r = fraction_of(n, 1, 2);
    out.push_back(candidate(fmt::format("erasurehead proportional d=2 r={} k=4n", r),
                            code,
                            {{"rule", "first_r_or_decodable"}, {"r", r}}));
  }
  out.push_back(candidate("exact proportional_crc s=1 k=4n",
                          {{"kind", "proportional_crc"}, {"s", 1}, {"factors", factors}},
                          {{"rule", "decodable"}}));
  for (auto& c : out) {
    c.block["partitions"] = 4 * n;
  }
  return out;
}
}  // namespace stragglersim::experiments
