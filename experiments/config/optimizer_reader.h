#pragma once
// The "optimizer" block of a run file and the keys beside it that end a run: the iteration count
// and time budget, the optimiser kind, the step (a number > 0, or "auto" for 1/beta with beta
// computed once per data set and kept in the setup cache), its schedule, the heavy-ball momentum,
// the start point and the minibatch size; then "target_loss" and "divergence_bound". Every
// refusal is a ConfigError at the key's JSON pointer.

#include <string>

#include "experiments/config/json_reader.h"
#include "experiments/config/run_plan.h"

namespace stragglersim::experiments {

/// Reads root's "optimizer" object into plan (the objective must be loaded unless delay_only).
/// A delay-only run reads only the iteration count and the time budget; an MPI worker's partial
/// objective takes no step (rank 0 validates it). smoothness_key names beta in setup (may be
/// null).
void read_optimizer(JsonReader& root,
                    RunPlan& plan,
                    bool delay_only,
                    bool simulated_backend,
                    SetupCache* setup,
                    const std::string& smoothness_key);

}  // namespace stragglersim::experiments
