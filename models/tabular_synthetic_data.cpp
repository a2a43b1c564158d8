#include "models/tabular_synthetic_data.h"

#include <algorithm>
#include <boost/random/bernoulli_distribution.hpp>
#include <boost/random/mersenne_twister.hpp>
#include <boost/random/normal_distribution.hpp>
#include <boost/random/uniform_01.hpp>
#include <cmath>
#include <numeric>
#include <utility>

#include "models/base/invariant.h"
#include "models/base/stop_request.h"

namespace stragglersim::models {

namespace {

constexpr Eigen::Index kAmazonFeatures = 241'915;
constexpr Eigen::Index kCovtypeFeatures = 15'509;
constexpr Eigen::Index kCovtypeNumeric = 10;
constexpr Eigen::Index kCovtypeBins = 32;
constexpr Eigen::Index kKcNumeric = 17;
constexpr Eigen::Index kKcOneHot = 27'654 - kKcNumeric;
// Numeric values are binned on [−kBinRange, kBinRange] (N(0, 1) values fall outside with
// probability 0.27%; they go to the end bins).
constexpr double kBinRange = 3.0;

std::vector<Eigen::Index> scale_cardinalities(const std::vector<Eigen::Index>& base,
                                              double factor) {
  std::vector<Eigen::Index> out;
  out.reserve(base.size());
  for (const Eigen::Index b : base) {
    out.push_back(std::max<Eigen::Index>(
        2, static_cast<Eigen::Index>(std::llround(static_cast<double>(b) * factor))));
  }
  return out;
}

// `total` columns split into `blocks` near-equal blocks (the first total % blocks get one more).
std::vector<Eigen::Index> split_blocks(Eigen::Index total, Eigen::Index blocks) {
  STRAGGLERSIM_ASSERT(total >= blocks, "fewer interaction columns than pairs");
  std::vector<Eigen::Index> out(static_cast<std::size_t>(blocks), total / blocks);
  for (Eigen::Index k = 0; k < total % blocks; ++k) {
    ++out[static_cast<std::size_t>(k)];
  }
  return out;
}

Eigen::Index sum(const std::vector<Eigen::Index>& v) {
  return std::accumulate(v.begin(), v.end(), Eigen::Index{0});
}

// SplitMix64 finaliser: a fixed hash (like a real pipeline's hashing trick), not a random draw.
std::uint64_t mix64(std::uint64_t z) {
  z += 0x9E3779B97F4A7C15ULL;
  z = (z ^ (z >> 30U)) * 0xBF58476D1CE4E5B9ULL;
  z = (z ^ (z >> 27U)) * 0x94D049BB133111EBULL;
  return z ^ (z >> 31U);
}

Eigen::Index interaction_cell(Eigen::Index pair,
                              Eigen::Index u,
                              Eigen::Index v,
                              Eigen::Index size) {
  const std::uint64_t h =
      mix64(mix64(mix64(static_cast<std::uint64_t>(pair)) ^ static_cast<std::uint64_t>(u)) ^
            static_cast<std::uint64_t>(v));
  return static_cast<Eigen::Index>(h % static_cast<std::uint64_t>(size));
}

// Zipf law over ranks 0 … n−1, P(r) ∝ 1/(r + 1), by inversion of a cumulative table.
class ZipfSampler {
 public:
  explicit ZipfSampler(Eigen::Index n) : cumulative_(static_cast<std::size_t>(n)) {
    double total = 0.0;
    for (Eigen::Index r = 0; r < n; ++r) {
      total += 1.0 / static_cast<double>(r + 1);
      cumulative_[static_cast<std::size_t>(r)] = total;
    }
  }
  Eigen::Index operator()(boost::random::mt19937_64& engine) const {
    const double u = boost::random::uniform_01<double>()(engine) * cumulative_.back();
    const auto it = std::upper_bound(cumulative_.begin(), cumulative_.end(), u);
    return std::min<Eigen::Index>(static_cast<Eigen::Index>(it - cumulative_.begin()),
                                  static_cast<Eigen::Index>(cumulative_.size()) - 1);
  }

 private:
  std::vector<double> cumulative_;
};

struct PlantedModel {
  double numeric_sd = 0.0;
  double active_probability = 1.0;  // non-numeric columns
  double active_sd = 1.0;
};

enum class Target { kLogistic, kRegression };

struct GeneratorSpec {
  TabularLayout layout;
  /// Per categorical column: the numeric column it bins, or −1 for a Zipf draw.
  std::vector<Eigen::Index> binned_from;
  PlantedModel planted;
  Target target = Target::kLogistic;
  double positive_fraction = 0.5;  // logistic
  double noise = 0.0;              // regression
};

double sigmoid(double t) {
  return t >= 0.0 ? 1.0 / (1.0 + std::exp(-t)) : std::exp(t) / (1.0 + std::exp(t));
}

// Intercept c with mean_i σ(c + z_i) = fraction (the mean is increasing in c).
double calibrate_intercept(const Eigen::VectorXd& margin, double fraction) {
  const double reach = margin.cwiseAbs().maxCoeff() + 40.0;
  double lo = -reach;
  double hi = reach;
  for (int iteration = 0; iteration < 100 && hi - lo > 1e-12; ++iteration) {
    const double mid = 0.5 * (lo + hi);
    double mean = 0.0;
    for (const double m : margin) mean += sigmoid(mid + m);
    mean /= static_cast<double>(margin.size());
    (mean < fraction ? lo : hi) = mid;
  }
  return 0.5 * (lo + hi);
}

/// First columns of the one-hot blocks and of the interaction blocks, after the numeric ones.
struct ColumnOffsets {
  std::vector<Eigen::Index> one_hot;
  std::vector<Eigen::Index> block;

  explicit ColumnOffsets(const TabularLayout& layout) {
    Eigen::Index next = layout.numeric;
    for (const Eigen::Index c : layout.cardinalities) {
      one_hot.push_back(next);
      next += c;
    }
    for (const Eigen::Index b : layout.interaction_blocks) {
      block.push_back(next);
      next += b;
    }
  }
};

/// The one engine and normal distribution of a generate call, shared in a fixed draw order:
/// planted weights, then row by row, then labels.
struct Draws {
  boost::random::mt19937_64 engine;
  boost::random::normal_distribution<double> normal{0.0, 1.0};
};

/// Planted weights: N(0, numeric_sd²) on numeric columns; elsewhere active with probability
/// active_probability, then N(0, active_sd²).
Eigen::VectorXd planted_weights(const GeneratorSpec& spec, Eigen::Index p, Draws& draws) {
  boost::random::bernoulli_distribution<double> active(spec.planted.active_probability);
  Eigen::VectorXd w(p);
  for (Eigen::Index j = 0; j < p; ++j) {
    if (j < spec.layout.numeric) {
      w[j] = spec.planted.numeric_sd * draws.normal(draws.engine);
    } else {
      w[j] = active(draws.engine) ? spec.planted.active_sd * draws.normal(draws.engine) : 0.0;
    }
  }
  return w;
}

/// Draws the rows of one generate call into compressed row-major arrays.
class RowWriter {
 public:
  RowWriter(const GeneratorSpec& spec, const Eigen::VectorXd& w, Draws& draws)
      : spec_(spec),
        offsets_(spec.layout),
        w_(w),
        draws_(draws),
        numeric_(static_cast<std::size_t>(spec.layout.numeric)),
        category_(spec.layout.cardinalities.size()) {
    for (std::size_t c = 0; c < spec.layout.cardinalities.size(); ++c) {
      zipf_.emplace_back(spec.binned_from[c] < 0 ? spec.layout.cardinalities[c] : 1);
    }
  }

  /// Writes one row's entries from position e on (numeric columns, one-hot blocks, interaction
  /// blocks: increasing column order, so no sort is needed) and returns its margin wᵀx.
  double write(std::int64_t* inner, double* values, Eigen::Index e) {
    const TabularLayout& layout = spec_.layout;
    const auto n_categorical = static_cast<Eigen::Index>(layout.cardinalities.size());
    double z = 0.0;
    const auto put = [&](Eigen::Index column, double value) {
      inner[e] = column;
      values[e] = value;
      z += w_[column] * value;
      ++e;
    };
    for (Eigen::Index k = 0; k < layout.numeric; ++k) {
      const double x = draws_.normal(draws_.engine);
      numeric_[static_cast<std::size_t>(k)] = x;
      put(k, x);
    }
    for (Eigen::Index c = 0; c < n_categorical; ++c) {
      const auto cu = static_cast<std::size_t>(c);
      category_[cu] = category_of(cu);
      put(offsets_.one_hot[cu] + category_[cu], 1.0);
    }
    if (!layout.interaction_blocks.empty()) {
      Eigen::Index pair = 0;
      for (Eigen::Index c = 0; c < n_categorical; ++c) {
        for (Eigen::Index d = c + 1; d < n_categorical; ++d, ++pair) {
          const auto pu = static_cast<std::size_t>(pair);
          put(offsets_.block[pu] + interaction_cell(pair,
                                                    category_[static_cast<std::size_t>(c)],
                                                    category_[static_cast<std::size_t>(d)],
                                                    layout.interaction_blocks[pu]),
              1.0);
        }
      }
    }
    return z;
  }

 private:
  /// Categorical column c of the current row: a bin of its numeric column, or a Zipf draw.
  Eigen::Index category_of(std::size_t c) {
    const Eigen::Index card = spec_.layout.cardinalities[c];
    if (spec_.binned_from[c] < 0) {
      return zipf_[c](draws_.engine);
    }
    const double x = numeric_[static_cast<std::size_t>(spec_.binned_from[c])];
    const double position = (x + kBinRange) / (2.0 * kBinRange) * static_cast<double>(card);
    return std::clamp<Eigen::Index>(static_cast<Eigen::Index>(std::floor(position)), 0, card - 1);
  }

  const GeneratorSpec& spec_;
  ColumnOffsets offsets_;
  const Eigen::VectorXd& w_;
  Draws& draws_;
  std::vector<ZipfSampler> zipf_;
  std::vector<double> numeric_;
  std::vector<Eigen::Index> category_;
};

/// Logistic: ±1 with P(+1) = σ(c + margin), c calibrated to the positive fraction; regression:
/// margin plus N(0, noise²).
void draw_labels(const GeneratorSpec& spec,
                 const Eigen::VectorXd& margin,
                 Draws& draws,
                 Eigen::VectorXd& labels) {
  const Eigen::Index m = margin.size();
  labels.resize(m);
  if (spec.target == Target::kLogistic) {
    boost::random::uniform_01<double> uniform;
    const double intercept = calibrate_intercept(margin, spec.positive_fraction);
    for (Eigen::Index i = 0; i < m; ++i) {
      labels[i] = uniform(draws.engine) < sigmoid(intercept + margin[i]) ? 1.0 : -1.0;
    }
  } else {
    for (Eigen::Index i = 0; i < m; ++i) {
      labels[i] = margin[i] + spec.noise * draws.normal(draws.engine);
    }
  }
}

Dataset generate(const GeneratorSpec& spec,
                 Eigen::Index m,
                 std::uint64_t seed,
                 RowKeep* keep,
                 LabelValues* label_values) {
  const Eigen::Index p = spec.layout.features();
  const Eigen::Index nnz = spec.layout.non_zeros_per_row();
  STRAGGLERSIM_ASSERT(m >= 1, "tabular generator: rows must be at least 1");
  Draws draws{boost::random::mt19937_64(seed)};
  const Eigen::VectorXd w = planted_weights(spec, p, draws);
  const Eigen::Index stored = keep != nullptr ? static_cast<Eigen::Index>(keep->rows.size()) : m;

  // Compressed row-major arrays written in place. Built inside the returned Dataset: Eigen
  // 3.4's SparseMatrix has no move constructor, so moving a finished matrix into a Dataset
  // would copy every non-zero. A partial load writes a skipped row into a scratch row.
  Dataset out;
  SparseRows& a = out.features.emplace<SparseRows>(stored, p);
  a.resizeNonZeros(stored * nnz);
  std::int64_t* outer = a.outerIndexPtr();
  std::vector<std::int64_t> scratch_inner(static_cast<std::size_t>(nnz));
  std::vector<double> scratch_values(static_cast<std::size_t>(nnz));
  // Every row's margin (8 bytes a row, whatever is kept): the intercept is calibrated on all.
  Eigen::VectorXd margin(m);
  RowWriter rows(spec, w, draws);
  Eigen::Index next = 0;
  for (Eigen::Index i = 0; i < m; ++i) {
    poll_stop_request(i);
    if (keep == nullptr || keep->keeps(i)) {
      outer[next] = next * nnz;
      margin[i] = rows.write(a.innerIndexPtr(), a.valuePtr(), next * nnz);
      ++next;
    } else {
      margin[i] = rows.write(scratch_inner.data(), scratch_values.data(), 0);
    }
  }
  outer[stored] = stored * nnz;
  Eigen::VectorXd labels;
  draw_labels(spec, margin, draws, labels);
  if (label_values != nullptr) {
    for (Eigen::Index i = 0; i < m; ++i) {
      label_values->add(labels[i]);
    }
  }
  if (keep == nullptr) {
    out.labels = std::move(labels);
    return out;
  }
  out.labels.resize(stored);
  for (Eigen::Index r = 0; r < stored; ++r) {
    out.labels[r] = labels[keep->rows[static_cast<std::size_t>(r)]];
  }
  return out;
}

std::vector<Eigen::Index> unbinned(std::size_t n) { return std::vector<Eigen::Index>(n, -1); }

}  // namespace

Eigen::Index TabularLayout::features() const {
  return numeric + sum(cardinalities) + sum(interaction_blocks);
}

Eigen::Index TabularLayout::non_zeros_per_row() const {
  return numeric + static_cast<Eigen::Index>(cardinalities.size()) +
         static_cast<Eigen::Index>(interaction_blocks.size());
}

TabularLayout amazon_like_layout(Eigen::Index features) {
  STRAGGLERSIM_ASSERT(features >= kAmazonLikeMinFeatures, "amazon_like: too few features");
  const std::vector<Eigen::Index> base = {7518, 4243, 128, 177, 449, 343, 2358, 67, 343};
  TabularLayout layout;
  layout.cardinalities = scale_cardinalities(
      base, static_cast<double>(features) / static_cast<double>(kAmazonFeatures));
  const auto c = static_cast<Eigen::Index>(base.size());
  layout.interaction_blocks = split_blocks(features - sum(layout.cardinalities), c * (c - 1) / 2);
  return layout;
}

TabularLayout covtype_like_layout(Eigen::Index features) {
  STRAGGLERSIM_ASSERT(features >= kCovtypeLikeMinFeatures, "covtype_like: too few features");
  std::vector<Eigen::Index> base(kCovtypeNumeric, kCovtypeBins);
  base.push_back(4);   // wilderness area
  base.push_back(40);  // soil type
  TabularLayout layout;
  layout.numeric = kCovtypeNumeric;
  layout.cardinalities = scale_cardinalities(
      base, static_cast<double>(features) / static_cast<double>(kCovtypeFeatures));
  const auto c = static_cast<Eigen::Index>(base.size());
  layout.interaction_blocks =
      split_blocks(features - kCovtypeNumeric - sum(layout.cardinalities), c * (c - 1) / 2);
  return layout;
}

TabularLayout kc_housing_like_layout(Eigen::Index features) {
  STRAGGLERSIM_ASSERT(features >= kKcHousingLikeMinFeatures, "kc_housing_like: too few features");
  const std::vector<Eigen::Index> base = {70, 372, 116, 1038, 9537, 5034, 752, 777, 8689, 946, 306};
  const Eigen::Index target = features - kKcNumeric;
  TabularLayout layout;
  layout.numeric = kKcNumeric;
  layout.cardinalities =
      scale_cardinalities(base, static_cast<double>(target) / static_cast<double>(kKcOneHot));
  // Rounding leaves the total a few columns off: the largest column absorbs the difference
  // (one column at a time, so none drops below 2).
  auto& cards = layout.cardinalities;
  while (sum(cards) != target) {
    auto largest = std::max_element(cards.begin(), cards.end());
    *largest += sum(cards) < target ? 1 : -1;
    STRAGGLERSIM_ASSERT(*largest >= 2, "kc_housing_like: too few features");
  }
  return layout;
}

Dataset make_amazon_like(const AmazonLikeOptions& options, RowKeep* keep, LabelValues* labels) {
  STRAGGLERSIM_ASSERT(options.positive_fraction > 0.0 && options.positive_fraction < 1.0,
                      "amazon_like: positive_fraction must be in (0, 1)");
  GeneratorSpec spec;
  spec.layout = amazon_like_layout(options.features);
  spec.binned_from = unbinned(spec.layout.cardinalities.size());
  spec.planted = PlantedModel{0.0, 0.1, 1.0};
  spec.target = Target::kLogistic;
  spec.positive_fraction = options.positive_fraction;
  return generate(spec, options.rows, options.seed, keep, labels);
}

Dataset make_covtype_like(const CovtypeLikeOptions& options, RowKeep* keep, LabelValues* labels) {
  STRAGGLERSIM_ASSERT(options.positive_fraction > 0.0 && options.positive_fraction < 1.0,
                      "covtype_like: positive_fraction must be in (0, 1)");
  GeneratorSpec spec;
  spec.layout = covtype_like_layout(options.features);
  spec.binned_from = unbinned(spec.layout.cardinalities.size());
  for (Eigen::Index k = 0; k < kCovtypeNumeric; ++k) {
    spec.binned_from[static_cast<std::size_t>(k)] = k;
  }
  spec.planted = PlantedModel{0.5, 0.1, 1.0};
  spec.target = Target::kLogistic;
  spec.positive_fraction = options.positive_fraction;
  return generate(spec, options.rows, options.seed, keep, labels);
}

Dataset make_kc_housing_like(const KcHousingLikeOptions& options,
                             RowKeep* keep,
                             LabelValues* labels) {
  STRAGGLERSIM_ASSERT(options.noise >= 0.0, "kc_housing_like: noise must be >= 0");
  GeneratorSpec spec;
  spec.layout = kc_housing_like_layout(options.features);
  spec.binned_from = unbinned(spec.layout.cardinalities.size());
  spec.planted = PlantedModel{1.0 / std::sqrt(static_cast<double>(kKcNumeric)), 1.0, 0.5};
  spec.target = Target::kRegression;
  spec.noise = options.noise;
  return generate(spec, options.rows, options.seed, keep, labels);
}

}  // namespace stragglersim::models
