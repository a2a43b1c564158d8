#pragma once
// A simulated run as a Chrome trace (`stragglersim run --timeline FILE`, docs/whatif.md "Simulated
// runs as timelines"): each iteration's worker computes, their messages and the master's stop
// and decode, so a simulated run opens in Perfetto as a measured one does and
// `stragglersim whatif` reads it back (each worker a data-parallel rank of one stage).

#include <cstdint>
#include <string>

#include "experiments/config/run_plan.h"

namespace stragglersim::experiments {

/// Throws ConfigError "--timeline: ..." for a run whose iterations the simulated clock does not
/// replay: a backend other than `simulated`, or an asynchronous update rule.
void check_timeline_run(const RunPlan& plan);

/// The first `iterations` iterations of `plan` on its simulated clock (plan.make_cluster with the
/// run's seed: the run's own delays, stops and heard sets) as Chrome trace JSON. Per iteration t
/// and worker i (pid i, its thread "PP rank 0, TP rank 0, ..."): `forward-compute` from the
/// broadcast for the drawn delay T_i, `grads-reduce-scatter` from T_i to the stop (a collective's
/// op lasts until it completes; args.arrival: when the message reached the master), `optimizer` (0
/// s) at the stop; the master (pid = workers): `stop` (an instant) and `decode` (0 s, the
/// simulator's decode takes no simulated time). Times in microseconds of simulated time; args carry
/// step, dp_rank and stage.
std::string simulated_timeline(const RunPlan& plan, std::uint64_t iterations);

}  // namespace stragglersim::experiments
