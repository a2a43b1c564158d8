#pragma once
// The "data" object of a config (docs/model.md §7): synthetic generators and data files, split
// into train and test sets.

#include <filesystem>
#include <memory>

#include "experiments/config/json_reader.h"
#include "models/dataset.h"

namespace stragglersim::experiments {

struct LoadedData {
  std::shared_ptr<models::Dataset> train;
  std::shared_ptr<models::Dataset> test;  ///< null or empty when there is no test set
};

/// Reads the data object; relative paths resolve against `base_dir`. Synthetic data are drawn
/// from the run's data stream, the split from its split stream.
LoadedData load_data(JsonReader& data, const std::filesystem::path& base_dir, std::uint64_t seed);

/// Logistic regression needs labels in {−1, +1}. Two other distinct values (e.g. covtype's 1 and
/// 2, or 0/1) are mapped, the smaller to −1 and the larger to +1; anything else is an error at
/// /loss/kind.
void require_binary_labels(LoadedData& data, JsonReader& root);

}  // namespace stragglersim::experiments
