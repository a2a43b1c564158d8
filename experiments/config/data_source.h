#pragma once
// The "data" object of a config (docs/model.md §7): synthetic generators and data files, split
// into train and test sets.

#include <filesystem>
#include <functional>
#include <memory>
#include <optional>
#include <vector>

#include "experiments/config/json_reader.h"
#include "models/dataset.h"

namespace stragglersim::experiments {

struct LoadedData {
  std::shared_ptr<models::Dataset> train;
  std::shared_ptr<models::Dataset> test;  ///< null or empty when there is no test set

  /// A partial load (an MPI worker, docs/mpi_backend.md "Data") before its rows are known:
  /// the full load's training rows m and the loader of the training rows of some partitions.
  struct Partial {
    Eigen::Index train_rows = 0;
    std::function<models::Dataset(const models::HeldRows&, models::LabelValues*)> load;
  };
  std::optional<Partial> partial;
  /// After load_held_partitions: where the held partitions' rows are in `train`.
  std::optional<models::HeldRows> held;
  /// Partial loads: the distinct labels of every row of the source (train and test).
  std::optional<models::LabelValues> label_values;

  /// m, the training rows of the full load.
  [[nodiscard]] Eigen::Index train_rows() const {
    return partial ? partial->train_rows : train->rows();
  }
};

/// Reads the data object; relative paths resolve against `base_dir`. Synthetic data are drawn
/// from the run's data stream, the split from its split stream. `partial`: validate as a full
/// load would (a data file is parsed once, keeping nothing) and load no rows yet (`partial`
/// set, `train` null, the test set empty). A full load of a data file (csv, libsvm,
/// fashion_mnist) notes what it holds in the memory ledger (note_memory).
LoadedData load_data(JsonReader& data,
                     const std::filesystem::path& base_dir,
                     std::uint64_t seed,
                     bool partial = false);

/// Loads the training rows of partitions `held` (ascending) of `partitions` into `data.train`
/// (models::arrange_held_rows: bitwise the full load's rows, padding aside): the source is read
/// or generated once more in full, keeping only those rows (Fashion-MNIST's plain IDX files are
/// read by seeking to those images). The rows held from a data file are noted in the memory
/// ledger. Illegal: no partial load pending.
void load_held_partitions(LoadedData& data, int partitions, const std::vector<int>& held);

/// Logistic regression needs labels in {−1, +1}. Two other distinct values (e.g. covtype's 1 and
/// 2, or 0/1) are mapped, the smaller to −1 and the larger to +1; anything else is an error at
/// /loss/kind.
void require_binary_labels(LoadedData& data, JsonReader& root);

/// The labels of every training and test row (a partial load: what the survey saw).
models::LabelValues label_summary(const LoadedData& data);

/// Softmax models need labels 0 … classes − 1: a label that is not a non-negative integer, or
/// one ≥ classes, is an error at /loss/classes (given) or /loss/kind (classes from the data).
void require_class_labels(const models::LabelValues& labels, int classes, JsonReader& loss);

}  // namespace stragglersim::experiments
