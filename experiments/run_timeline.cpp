#include "experiments/run_timeline.h"

#include <fmt/format.h>

#include <nlohmann/json.hpp>

#include "experiments/config/config_error.h"
#include "sim/simulated_cluster.h"

namespace stragglersim::experiments {

namespace {

nlohmann::json thread_name(int pid, int tid, const std::string& name) {
  return {
      {"name", "thread_name"}, {"ph", "M"}, {"pid", pid}, {"tid", tid}, {"args", {{"name", name}}}};
}

nlohmann::json complete(const char* name,
                        const char* category,
                        int pid,
                        int tid,
                        double start,
                        double seconds,
                        std::uint64_t step) {
  return {{"name", name},
          {"cat", category},
          {"ph", "X"},
          {"pid", pid},
          {"tid", tid},
          {"ts", start * 1e6},
          {"dur", seconds * 1e6},
          {"args", {{"step", step}, {"dp_rank", pid}, {"stage", 0}}}};
}

}  // namespace

void check_timeline_run(const RunPlan& plan) {
  if (plan.backend.name != "simulated") {
    throw ConfigError(
        fmt::format("--timeline: the run's iterations are not on the simulated "
                    "clock; got backend '{}'; expected backend simulated",
                    plan.backend.name));
  }
  if (plan.update) {
    throw ConfigError(
        "--timeline: an asynchronous update rule has no iterations to draw; got an asynchronous "
        "stopping rule; expected a synchronous one");
  }
}

std::string simulated_timeline(const RunPlan& plan, std::uint64_t iterations) {
  auto cluster = plan.make_cluster(plan.seed);
  const int n = cluster->workers();
  nlohmann::json events = nlohmann::json::array();
  events.push_back(
      {{"name", "process_name"}, {"ph", "M"}, {"pid", n}, {"args", {{"name", "master"}}}});
  for (int i = 0; i < n; ++i) {
    events.push_back({{"name", "process_name"},
                      {"ph", "M"},
                      {"pid", i},
                      {"args", {{"name", fmt::format("worker {}", i)}}}});
    events.push_back(thread_name(i, 0, "PP rank 0, TP rank 0, compute"));
    events.push_back(thread_name(i, 1, "PP rank 0, TP rank 0, message"));
  }
  for (std::uint64_t t = 1; t <= iterations; ++t) {
    const sim::IterationTiming& timing = cluster->next_iteration();
    const double stop = timing.broadcast + timing.iteration_time;
    for (int i = 0; i < n; ++i) {
      const auto k = static_cast<std::size_t>(i);
      const double delay = timing.delays[k];
      events.push_back(complete("forward-compute", "compute", i, 0, timing.broadcast, delay, t));
      // A collective's op lasts until it completes (as NCCL's do): the message from the compute's
      // end to the master's stop; its arrival is in args.
      nlohmann::json message = complete("grads-reduce-scatter",
                                        "message",
                                        i,
                                        1,
                                        timing.broadcast + delay,
                                        std::max(0.0, timing.iteration_time - delay),
                                        t);
      message["args"]["arrival"] = (timing.broadcast + timing.arrivals[k]) * 1e6;
      events.push_back(message);
      events.push_back(complete("optimizer", "update", i, 0, stop, 0.0, t));
    }
    events.push_back({{"name", "stop"},
                      {"ph", "i"},
                      {"s", "p"},
                      {"pid", n},
                      {"tid", 0},
                      {"ts", stop * 1e6},
                      {"args", {{"step", t}, {"heard", timing.heard}}}});
    nlohmann::json decode = complete("decode", "master", n, 0, stop, 0.0, t);
    decode["args"].erase("stage");
    decode["args"].erase("dp_rank");
    events.push_back(decode);
  }
  return events.dump() + "\n";
}

}  // namespace stragglersim::experiments
