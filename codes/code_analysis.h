#pragma once
// Analysis of a gradient code over straggler patterns: loads, the assignment matrix, and the
// distribution of decoding errors and condition numbers over all (or sampled) patterns.

#include <cstdint>
#include <functional>
#include <span>
#include <string>
#include <vector>

#include "codes/gradient_code.h"

namespace stragglersim::codes {

struct CodeReportOptions {
  /// Number of stragglers per pattern; −1 means the code's stragglers_tolerated().
  int stragglers = -1;
  /// When > 0, patterns of this many workers heard instead ("wait for r"); overrides stragglers.
  int wait_for = 0;
  /// Random patterns drawn when the patterns are not enumerated.
  int samples = 200;
  /// All C(n, n − r) patterns are enumerated when there are at most this many.
  std::int64_t exhaustive_limit = 5000;
  std::uint64_t seed = 1;
  /// Whether to fill CodeReport::assignment_csv (B can be large).
  bool include_assignment = true;
};

/// Statistics of one decoder over the patterns analysed.
struct DecoderSummary {
  std::string decoder;  ///< "optimal", "one_step" or "exact"
  int patterns = 0;
  int exact = 0;  ///< patterns decoded exactly (Decoding::exact)
  double mean_error = 0.0;
  double sd_error = 0.0;  ///< sample standard deviation of ‖α − 1‖²
  double min_error = 0.0;
  double median_error = 0.0;
  double p90_error = 0.0;
  double max_error = 0.0;  ///< the max residual ‖α − 1‖²
  double median_condition = 1.0;
  double max_condition = 1.0;
  double mean_partitions_covered = 0.0;
  std::string first_problem;  ///< the first refusal message (exact decoder), empty if none
};

struct CodeReport {
  std::string code;
  int workers = 0;
  int partitions = 0;
  int stragglers_tolerated = 0;
  int stragglers = 0;  ///< per pattern
  int heard = 0;       ///< workers heard per pattern (n − stragglers)
  bool exhaustive = false;
  int patterns = 0;
  std::uint64_t seed = 0;
  std::vector<double> loads;
  double min_load = 0.0;
  double mean_load = 0.0;
  double max_load = 0.0;
  std::string assignment_csv;
  std::vector<DecoderSummary> decoders;  ///< optimal, one_step, exact
};

/// Analyses `code` over all patterns (when few enough) or random ones. Illegal: stragglers
/// outside [0, n], wait_for > n, samples < 1.
[[nodiscard]] CodeReport analyse_code(const GradientCode& code, const CodeReportOptions& options);
/// B as CSV: header "worker,p0,…,p{k−1}", one row per worker, shortest round-trip decimals.
[[nodiscard]] std::string assignment_csv(const GradientCode& code);

/// Calls `visit(heard)` for straggler patterns of `stragglers` workers out of `workers`: all of
/// them in lexicographic order of the straggler set when C(n, s) ≤ exhaustive_limit, otherwise
/// `samples` uniformly random ones from mt19937_64(seed). `heard` is ascending. Returns whether
/// the enumeration was exhaustive.
bool for_each_straggler_pattern(int workers,
                                int stragglers,
                                std::int64_t exhaustive_limit,
                                int samples,
                                std::uint64_t seed,
                                const std::function<void(std::span<const int>)>& visit);

/// C(n, m), saturating at INT64_MAX.
[[nodiscard]] std::int64_t binomial(int n, int m);

/// Numerical stability of exact decoding for one code (benchmarks/code_stability.md).
struct StabilityRow {
  std::string code;
  int workers = 0;
  int stragglers = 0;
  int patterns = 0;
  double max_residual = 0.0;  ///< max ‖α − 1‖² of the least-squares decode
  double median_condition = 1.0;
  double max_condition = 1.0;
  int refused = 0;  ///< patterns where decode_exact refused
  std::string first_problem;
  /// The burst pattern (workers 0 … s − 1 straggle), the hard case for cyclic MDS codes.
  double burst_residual = 0.0;
  double burst_condition = 1.0;
  bool burst_exact = false;
};

/// Decodes `patterns` random patterns of exactly `stragglers` stragglers with decode_exact, and
/// the burst pattern separately.
[[nodiscard]] StabilityRow measure_stability(const GradientCode& code,
                                             int stragglers,
                                             int patterns,
                                             std::uint64_t seed);

}  // namespace stragglersim::codes
