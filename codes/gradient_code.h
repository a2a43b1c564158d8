#pragma once
// Gradient codes (Tandon et al. 2017; docs/model.md). A code is an n × k assignment matrix B:
// worker i holds the partitions in supp(B_i) and sends y_i = Σ_j B_ij ∇F_j(x). Given the set K
// of workers heard, a decoder picks weights a (zero outside K) and the master forms
// ĝ = Σ_{i∈K} a_i y_i = Σ_j α_j ∇F_j with α = B_Kᵀa. Decoding is exact when α = 1; the
// decoding error is ‖α − 1‖².

#include <Eigen/Core>
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "models/base/options_check.h"

namespace stragglersim::codes {

/// Outcome of one decode. `weights` has one entry per worker (zero for workers unused),
/// `alpha` one per partition.
struct Decoding {
  Eigen::VectorXd weights;
  Eigen::VectorXd alpha;
  double error = 0.0;      ///< ‖α − 1‖²
  double condition = 1.0;  ///< condition number of the linear solve (1 for combinatorial decoders)
  bool exact = false;      ///< error ≤ kExactTolerance and condition ≤ kConditionLimit
  int partitions_covered = 0;  ///< #{j : α_j ≠ 0}
  std::string problem;         ///< why an exact decode was refused; empty otherwise
};

/// Residual ‖α − 1‖² below which a decode counts as exact.
inline constexpr double kExactTolerance = 1e-9;
/// Condition number above which a linear-algebra decode is flagged ill-conditioned: with
/// double precision, 1e10 leaves about six correct digits in the gradient.
inline constexpr double kConditionLimit = 1e10;

/// How the estimate is rescaled after decoding (docs/model.md, ErasureHead): `kNone` as the
/// reference implementation, `kExpected` divide by 1 − q, `kEmpirical` multiply by k / covered.
enum class Rescale { kNone, kExpected, kEmpirical };

/// How a code's support is laid out, as far as timing and decoding are concerned.
enum class CodeLayout {
  kGroups,     ///< n/d groups of d workers with identical supports (FRC; uncoded is d = 1)
  kCyclic,     ///< every worker holds s + 1 partitions, exact from any n − s workers (CRC, MDS)
  kIrregular,  ///< random or non-uniform supports (BGC, expander, SGC)
};

/// How the optimal and exact decoders work.
enum class DecoderFamily {
  kCombinatorial,  ///< pick one heard worker per covered group: no linear solve, condition 1
  kLinearAlgebra,  ///< least squares on B_K (complete orthogonal decomposition)
};

/// What a code says about itself (`GradientCode::structure`). Invariants: kGroups has
/// group_size ≥ 1 and groups · group_size = n; kCyclic has group_size = s + 1 (the load) and
/// groups = 0; kIrregular has group_size = groups = 0.
struct CodeStructure {
  CodeLayout layout = CodeLayout::kIrregular;
  int group_size = 0;            ///< d: workers per group (kGroups), or the load s + 1 (kCyclic)
  int groups = 0;                ///< n / d for kGroups
  int stragglers_tolerated = 0;  ///< worst-case stragglers exact decoding tolerates
  DecoderFamily decoder = DecoderFamily::kLinearAlgebra;
  bool one_step = false;  ///< decode_one_step has fixed weights of its own (not the optimal)
};

/// Selects a code's compact constructor (GradientCode::Compact): no per-worker arrays.
struct CompactTag {};

/// Codes with k = n: a violation naming `partitions` unless partitions is 0 (k = n by
/// default) or equals workers.
[[nodiscard]] Validation one_partition_per_worker(const char* code, int workers, int partitions);

class GradientCode {
 public:
  /// Illegal: empty B, negative entries are allowed (MDS codes) but a zero column is not.
  explicit GradientCode(Eigen::MatrixXd assignment);
  virtual ~GradientCode() = default;
  GradientCode(const GradientCode&) = delete;
  GradientCode& operator=(const GradientCode&) = delete;

  [[nodiscard]] virtual std::string name() const = 0;
  /// Worst-case number of stragglers exact decoding tolerates (s); 0 when none is guaranteed.
  [[nodiscard]] virtual int stragglers_tolerated() const = 0;
  /// The code's layout and decoder family. Default: irregular, linear algebra, no one-step
  /// rule, stragglers_tolerated().
  [[nodiscard]] virtual CodeStructure structure() const;
  /// For codes whose workers form groups with identical supports (GroupCode: FRC,
  /// `proportional`): each worker's group, in [0, groups). nullopt for every other code. The
  /// theory reads it where structure() is irregular (groups of unequal shares).
  [[nodiscard]] virtual std::optional<std::vector<int>> worker_groups() const {
    return std::nullopt;
  }
  /// K > 0 for codes whose groups are re-formed every K iterations from the stragglers seen
  /// (`dynamic_frc`: the cluster permutes which worker plays each position, sim/regrouping.h);
  /// 0 for a fixed assignment. No timing theory applies to K > 0: it depends on the run's history.
  [[nodiscard]] virtual int regroup_every() const { return 0; }
  /// Whether any n − stragglers_tolerated() distinct workers decode exactly, whatever the
  /// supports (`crc`, `cyclic_mds`, `proportional_crc`): the timing theory's cyclic family, with
  /// the code's own loads. Default: the cyclic layout.
  [[nodiscard]] virtual bool decodes_from_any_count() const {
    return structure().layout == CodeLayout::kCyclic;
  }

  [[nodiscard]] int workers() const { return workers_; }
  [[nodiscard]] int partitions() const { return partitions_; }
  /// B, n × k, dense. Codes built from supports (FRC, uncoded) materialise it only when
  /// n·k ≤ kDenseLimit, so delay-only runs with 10^6 workers stay O(n); asking a larger one
  /// for its dense B is an internal error.
  [[nodiscard]] const Eigen::MatrixXd& assignment() const;
  /// B_ij over support(worker), in the same order.
  [[nodiscard]] std::span<const double> support_values(int worker) const;
  /// Partitions held by `worker`, ascending.
  [[nodiscard]] std::span<const int> support(int worker) const;
  /// Normalised load |supp(B_i)| · n / k (an uncoded worker has load 1).
  [[nodiscard]] double load(int worker) const;
  [[nodiscard]] std::vector<double> loads() const;
  /// The load every worker has, for a code built compact (see the compact constructor);
  /// nullopt otherwise (call loads()).
  [[nodiscard]] std::optional<double> uniform_load() const;
  /// Whether the code keeps no per-worker arrays (support, B and the decoders are unavailable).
  [[nodiscard]] bool compact() const { return compact_support_ > 0; }

  /// Whether B_Kᵀa = 1 is solvable (to tolerance, well conditioned) for the workers heard.
  [[nodiscard]] virtual bool decodable(std::span<const int> heard) const;
  /// argmin_a ‖B_Kᵀa − 1‖² over a supported on `heard`. Default: complete orthogonal
  /// decomposition of B_Kᵀ (rank-revealing, never normal equations), with its condition number.
  [[nodiscard]] virtual Decoding decode_optimal(std::span<const int> heard) const;
  /// decode_optimal's weights, α and `exact` without the cost of its condition number's value
  /// (an SVD of the decomposition's m × m triangle T): `condition` is the upper bound
  /// ‖T‖_F·‖T⁻¹‖_F of σ_max/σ_min (a triangular inverse, m³/3 operations) wherever that bound
  /// is within kConditionLimit, which decides `exact` as the value would; past it the value.
  /// For callers that read the outcome alone (DecodeMemo). Codes with their own decode_optimal
  /// return it.
  [[nodiscard]] virtual Decoding decode_outcome(std::span<const int> heard) const;
  /// Exact decoding: the optimal decode, marked `exact` only when its residual and condition
  /// number are within limits; otherwise `problem` says why.
  [[nodiscard]] virtual Decoding decode_exact(std::span<const int> heard) const;
  /// Fixed-weight decoding (BGC one-step, SGC, expander): a_i = one_step_weight(r) on the r
  /// distinct workers heard, 0 elsewhere (no worker heard: a = 0), so α = w(r)·Bᵀ1_K is linear
  /// in the heard set for a given r. Codes that define no one-step rule return the optimal decode.
  [[nodiscard]] Decoding decode_one_step(std::span<const int> heard) const;
  /// The one-step weight w(r) given to each of r ≥ 1 distinct workers heard; nullopt when the
  /// code has no one-step rule (then structure().one_step is false).
  [[nodiscard]] virtual std::optional<double> one_step_weight(int heard) const;

 protected:
  /// Whether a partition held by no worker (a zero column of B) is legal.
  enum class EmptyPartitions { kForbidden, kAllowed };
  /// For random codes in which a partition may be held by nobody (BGC): such a partition always
  /// has α_j = 0 and contributes 1 to the decoding error.
  GradientCode(Eigen::MatrixXd assignment, EmptyPartitions empty);
  /// A 0/1 code given by its supports (B_ij = 1 for j in supports[i]); O(nnz) memory.
  GradientCode(int partitions, std::vector<std::vector<int>> supports);

  /// A compact 0/1 code whose every worker holds `support_size` partitions, described by its
  /// structure() alone: O(1) memory at any n. For delay-only runs of group codes (10⁹ workers),
  /// which need the layout and the loads, never a support; asking it for a support, B or a
  /// decode is an internal error.
  struct Compact {
    int workers = 0;
    int partitions = 0;
    int support_size = 0;
  };
  explicit GradientCode(const Compact& compact);

  /// Largest n·k for which a support-built code also keeps its dense B.
  static constexpr std::int64_t kDenseLimit = 1 << 24;

  /// Fills α, error, partitions_covered and exact from `weights` (condition given).
  [[nodiscard]] Decoding finish(Eigen::VectorXd weights, double condition) const;

 private:
  /// The complete-orthogonal-decomposition decode of decode_optimal; with `bound_condition` the
  /// condition as decode_outcome computes it.
  [[nodiscard]] Decoding least_squares_decode(std::span<const int> heard,
                                              bool bound_condition) const;
  int workers_ = 0;
  int partitions_ = 0;
  Eigen::MatrixXd b_;
  std::vector<std::vector<int>> supports_;
  std::vector<std::vector<double>> values_;
  int compact_support_ = 0;  ///< > 0: built compact, every worker holds this many partitions
};

/// Multiplies the decode weights (and α) by `factor`: the `expected` and `empirical` rescales.
void rescale(Decoding& decoding, Rescale rule, double erasure_probability);

}  // namespace stragglersim::codes
