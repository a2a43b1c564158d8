#pragma once
// The explicit name -> factory tables of the run-time plug-in points (STYLE.md §4): gradient
// codes, delay models, loss models, stopping rules. A new implementation is one new file in its
// library plus one row here. Each factory reads (and validates) its own keys from the config.

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "codes/gradient_code.h"
#include "experiments/config/json_reader.h"
#include "models/loss_model.h"
#include "sim/delay_model.h"
#include "sim/stopping_rule.h"

namespace stragglersim::experiments {

/// What a factory may need beyond its own keys.
struct ClusterShape {
  std::string file;  ///< config file, for messages about top-level keys
  int workers = 0;
  int partitions = 0;
  bool partitions_given = false;  ///< whether the config set "partitions" (else k = n)
  std::uint64_t seed = 1;         ///< the code's own stream seed, derived from the run seed
};

using CodeFactory = std::function<std::shared_ptr<const codes::GradientCode>(
    JsonReader& code, const ClusterShape& shape)>;
using DelayFactory = std::function<std::function<std::unique_ptr<sim::DelayModel>()>(
    JsonReader& delay, const std::vector<double>& loads)>;
using LossFactory = std::function<std::shared_ptr<const models::LossModel>()>;
using StoppingFactory = std::function<std::shared_ptr<const sim::StoppingRule>(
    JsonReader& stopping, const std::shared_ptr<const codes::GradientCode>& code)>;

template <typename Factory>
struct FactoryRow {
  std::string name;
  Factory make;
};

const std::vector<FactoryRow<CodeFactory>>& code_factories();
const std::vector<FactoryRow<DelayFactory>>& delay_factories();
const std::vector<FactoryRow<LossFactory>>& loss_factories();
const std::vector<FactoryRow<StoppingFactory>>& stopping_factories();

/// Names of a table's rows, sorted, for "valid values are: ..." messages.
template <typename Factory>
std::vector<std::string> names_of(const std::vector<FactoryRow<Factory>>& table);

}  // namespace stragglersim::experiments
