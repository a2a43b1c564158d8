#pragma once
// Seeded sparse data sets shaped like the paper's three workloads (README.md (The paper's
// figures)), built as one-hot encoded tables: each row has a few numeric columns (standardised
// values), one active category per categorical column (one-hot, value 1) and, for the logistic
// workloads, one active cell per pair of categorical columns (pairwise interactions, hashed into a
// fixed block of columns per pair, value 1). Every row therefore has the same number of non-zeros,
// written straight into compressed row-major arrays: memory is 16 bytes per non-zero plus 8 per
// row, never rows × features.
//
// Labels come from a planted linear model w* over the same columns: logistic workloads draw
// b_i = +1 with probability σ(c + a_iᵀw*), the intercept c calibrated by bisection so that the
// expected fraction of +1 labels is `positive_fraction`; the regression workload has
// b_i = a_iᵀw* + noise·ε_i. Categories follow a Zipf law (probability ∝ 1/rank), as category
// frequencies in the real tables do. Draw order (part of the contract: same options, same bytes):
// w* column by column, then row by row (numeric values, then categories), then one label draw
// per row. All draws are Boost.Random on one mt19937_64 stream.

#include <cstdint>
#include <vector>

#include "models/dataset.h"

namespace stragglersim::models {

/// Amazon Employee Access (Kaggle 2013) shape: 9 categorical columns with the real table's
/// cardinalities RESOURCE 7518, MGR_ID 4243, ROLE_ROLLUP_1 128, ROLE_ROLLUP_2 177,
/// ROLE_DEPTNAME 449, ROLE_TITLE 343, ROLE_FAMILY_DESC 2358, ROLE_FAMILY 67, ROLE_CODE 343
/// (15 626 one-hot columns) plus the 36 pairwise interactions hashed into the remaining
/// 226 289 columns (one block of ~6 286 per pair): 241 915 features, 45 non-zeros per row.
/// 26 215 rows is the paper's size (80% of the real 32 769). positive_fraction 0.942 is the
/// real table's share of ACTION = 1 (30 872 / 32 769). Planted model: each column active with
/// probability 0.1, active weights N(0, 1).
/// Smaller `features` scale every cardinality by features / 241 915 (at least 2 each).
/// Illegal: rows < 1, features < kAmazonLikeMinFeatures, positive_fraction outside (0, 1).
struct AmazonLikeOptions {
  Eigen::Index rows = 26'215;
  Eigen::Index features = 241'915;
  double positive_fraction = 0.942;
  std::uint64_t seed = 1;
};
inline constexpr Eigen::Index kAmazonLikeMinFeatures = 100;
Dataset make_amazon_like(const AmazonLikeOptions& options,
                         RowKeep* keep = nullptr,
                         LabelValues* labels = nullptr);

/// Forest Covertype, classes 1 (Spruce/Fir, label −1) vs 2 (Lodgepole Pine, +1) shape: the 10
/// numeric columns as standardised values (10 columns), each also binned into 32 equal-width
/// bins on [−3, 3] (one-hot, 320 columns), wilderness area (4) and soil type (40) one-hot, and
/// the 66 pairwise interactions of those 12 categorical columns hashed into the remaining
/// 15 135 columns: 15 509 features, 10 + 12 + 66 = 88 non-zeros per row. 396 112 rows is 80% of
/// the real 495 141 rows of classes 1 and 2; positive_fraction 0.572 is class 2's share
/// (283 301 / 495 141). Planted model: numeric weights N(0, 0.5²); other columns active with
/// probability 0.1, active weights N(0, 1).
/// Smaller `features` scale bins and categories by features / 15 509 (at least 2 each).
/// Illegal: rows < 1, features < kCovtypeLikeMinFeatures, positive_fraction outside (0, 1).
struct CovtypeLikeOptions {
  Eigen::Index rows = 396'112;
  Eigen::Index features = 15'509;
  double positive_fraction = 0.572;
  std::uint64_t seed = 1;
};
inline constexpr Eigen::Index kCovtypeLikeMinFeatures = 200;
Dataset make_covtype_like(const CovtypeLikeOptions& options,
                          RowKeep* keep = nullptr,
                          LabelValues* labels = nullptr);

/// KC House Sales (King County 2014–15) shape, least squares: 17 numeric columns as standardised
/// values (bedrooms, bathrooms, sqft_living, sqft_lot, floors, waterfront, view, condition,
/// grade, sqft_above, sqft_basement, yr_built, yr_renovated, lat, long, sqft_living15,
/// sqft_lot15) plus one-hot encodings of 11 high-cardinality columns with the real table's
/// distinct counts: zipcode 70, date 372, yr_built 116, sqft_living 1038, sqft_lot 9537
/// (9782 in the real table, trimmed so the total is exact), lat 5034, long 752,
/// sqft_living15 777, sqft_lot15 8689, sqft_above 946, sqft_basement 306: 17 + 27 637 = 27 654
/// features, 28 non-zeros per row, no interactions. 17 290 rows is 80% of the real 21 613.
/// Planted model: numeric weights N(0, 1/17), one-hot weights N(0, 0.5²); b = aᵀw* + noise·ε.
/// Smaller `features` scale the one-hot columns by (features − 17) / 27 637 (at least 2 each).
/// Illegal: rows < 1, features < kKcHousingLikeMinFeatures, noise < 0.
struct KcHousingLikeOptions {
  Eigen::Index rows = 17'290;
  Eigen::Index features = 27'654;
  double noise = 0.5;
  std::uint64_t seed = 1;
};
inline constexpr Eigen::Index kKcHousingLikeMinFeatures = 64;
Dataset make_kc_housing_like(const KcHousingLikeOptions& options,
                             RowKeep* keep = nullptr,
                             LabelValues* labels = nullptr);

// With `keep`, the make_* functions store only those source rows (ascending), still drawing
// every row: memory is 16 bytes per kept non-zero plus 8 bytes per row of the whole table (the
// margins the intercept calibration and the labels need), time that of the whole table.
// `labels` (optional) receives the distinct labels of every row.

/// Where a generator puts its columns (exposed for tests and documentation).
struct TabularLayout {
  Eigen::Index numeric = 0;                      ///< value columns [0, numeric)
  std::vector<Eigen::Index> cardinalities;       ///< one-hot blocks, in order, after the numerics
  std::vector<Eigen::Index> interaction_blocks;  ///< one block per pair (c < d), after one-hots
  [[nodiscard]] Eigen::Index features() const;
  [[nodiscard]] Eigen::Index non_zeros_per_row() const;
};
TabularLayout amazon_like_layout(Eigen::Index features);
TabularLayout covtype_like_layout(Eigen::Index features);
TabularLayout kc_housing_like_layout(Eigen::Index features);

}  // namespace stragglersim::models
