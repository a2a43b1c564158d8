// `stragglersim whatif TIMELINE [--meta META.yaml] [--json] [--timeline-out FILE]`: the what-if
// replay of an op-level training timeline (docs/whatif.md): the slowdown S, its attribution to
// op types, data-parallel ranks and stages, M_W and M_S, and what four mitigations recover.

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <iostream>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "experiments/cli/commands.h"
#include "experiments/config/config_error.h"
#include "experiments/output_file.h"
#include "fit/chrome_trace_json.h"
#include "sim/replay/whatif_analysis.h"

namespace stragglersim::experiments {
namespace {

struct WhatIfRequest {
  std::string path;
  std::string meta;
  std::string op_map;
  bool strict_names = false;
  bool json = false;
  std::string timeline_out;
  std::string ideal_compute = "mean";
  std::string ideal_comm = "median";
  std::vector<std::int64_t> drop_steps;
  replay::WhatIfOptions options;
};

replay::IdealStatistic statistic_named(const std::string& value, const char* option) {
  if (value == "mean") return replay::IdealStatistic::kMean;
  if (value == "median") return replay::IdealStatistic::kMedian;
  throw ConfigError(fmt::format(
      "{}: unknown statistic '{}'; got {}; expected mean, median", option, value, value));
}

replay::OpNameMap read_op_map(const WhatIfRequest& a) {
  if (a.op_map.empty()) {
    replay::OpNameMap map = replay::bytedance_op_names();
    map.strict = a.strict_names;
    return map;
  }
  const nlohmann::json doc = sim::parse_trace_json(a.op_map, sim::read_maybe_gzip(a.op_map));
  if (!doc.is_object()) {
    throw ConfigError(
        fmt::format("{}: not an object of event names; got a JSON {}; expected "
                    "{{\"event name\": \"op type\", ...}}",
                    a.op_map,
                    doc.type_name()));
  }
  std::map<std::string, std::string> extra;
  for (const auto& [name, type] : doc.items()) {
    if (!type.is_string()) {
      throw ConfigError(fmt::format("{}:/{}: not a string; got {}; expected an op type name",
                                    a.op_map,
                                    name,
                                    sim::shown(type)));
    }
    extra[name] = type.get<std::string>();
  }
  return replay::op_names_from(extra, a.op_map, a.strict_names);
}

void check_options(const WhatIfRequest& a) {
  if (!(a.options.deadline > 0.0) || !std::isfinite(a.options.deadline)) {
    throw ConfigError(
        fmt::format("--deadline: must be a finite number > 0; got {}; expected the "
                    "compute deadline over the ideal compute time",
                    a.options.deadline));
  }
  if (a.options.backup_replicas < 1) {
    throw ConfigError(
        fmt::format("--backup: must be ≥ 1; got {}; expected the replicas the "
                    "reduction goes without",
                    a.options.backup_replicas));
  }
}

const char* thread_kind(replay::OpType t) {
  if (replay::is_pipeline_p2p(t)) return "pp-comm";
  switch (t) {
    case replay::OpType::kForwardCompute:
    case replay::OpType::kBackwardCompute:
    case replay::OpType::kOptimizer:
    case replay::OpType::kGc:
      return "compute";
    default:
      return "dp-comm";
  }
}

/// The ideal replay as Chrome trace JSON: steps one after another (each 1.1 × its ideal time
/// apart), a collective drawn as its transfer only.
nlohmann::json ideal_timeline(const replay::OpGraph& graph, const replay::WhatIfReport& r) {
  const auto& t = graph.timeline();
  std::vector<double> offset(graph.steps(), 0.0);
  for (std::size_t s = 1; s < offset.size(); ++s)
    offset[s] = offset[s - 1] + 1.1 * r.ideal.step_time[s - 1];
  nlohmann::json events = nlohmann::json::array();
  const std::vector<std::string> kinds = {"compute", "pp-comm", "dp-comm"};
  for (int dp = 0; dp < t.layout.dp_size; ++dp) {
    events.push_back({{"name", "process_name"},
                      {"ph", "M"},
                      {"pid", dp},
                      {"args", {{"name", fmt::format("DP rank {}", dp)}}}});
    for (int stage = 0; stage < t.layout.pp_size; ++stage) {
      for (std::size_t k = 0; k < kinds.size(); ++k) {
        events.push_back(
            {{"name", "thread_name"},
             {"ph", "M"},
             {"pid", dp},
             {"tid", stage * 3 + static_cast<int>(k)},
             {"args", {{"name", fmt::format("PP rank {}, TP rank 0, {}", stage, kinds[k])}}}});
      }
    }
  }
  for (std::size_t v = 0; v < t.ops.size(); ++v) {
    const replay::Op& op = t.ops[v];
    const std::string kind = thread_kind(op.type);
    const auto k = std::find(kinds.begin(), kinds.end(), kind) - kinds.begin();
    const double dur = graph.in_group(v) ? r.ideal_durations[v] : r.ideal.end[v] - r.ideal.start[v];
    const double start = r.ideal.end[v] - dur + offset[graph.step_of(v)];
    events.push_back({{"name", std::string(replay::op_type_name(op.type))},
                      {"cat", kind},
                      {"ph", "X"},
                      {"pid", op.dp},
                      {"tid", op.stage * 3 + static_cast<int>(k)},
                      {"ts", start * 1e6},
                      {"dur", dur * 1e6},
                      {"args",
                       {{"step", op.step},
                        {"dp_rank", op.dp},
                        {"stage", op.stage},
                        {"mb_id", op.micro_batch},
                        {"model_chunk", op.chunk}}}});
  }
  return events;
}

template <class Values>
nlohmann::json indexed(const Values& values) {
  nlohmann::json out = nlohmann::json::object();
  for (std::size_t k = 0; k < values.size(); ++k) out[std::to_string(k)] = values[k];
  return out;
}

nlohmann::json report_json(const replay::OpGraph& graph, const replay::WhatIfReport& r) {
  nlohmann::json j;
  j["timeline"] = graph.timeline().path;
  j["slowdown"] = r.slowdown;
  j["by_op_type"] = nlohmann::json::object();
  for (const auto& [name, value] : r.by_op_type) j["by_op_type"][name] = value;
  j["by_dp_rank"] = indexed(r.by_dp_rank);
  j["by_stage"] = indexed(r.by_stage);
  j["m_w"] = r.m_w;
  j["m_w_ranks"] = nlohmann::json::array();
  for (const auto& [dp, stage] : r.m_w_ranks)
    j["m_w_ranks"].push_back({{"dp_rank", dp}, {"stage", stage}});
  j["m_s"] = r.m_s;
  j["steps"] = nlohmann::json::object();
  for (std::size_t s = 0; s < r.steps.size(); ++s) {
    const auto& step = r.steps[s];
    j["steps"][std::to_string(step.step)] = {{"recorded", step.recorded},
                                             {"replayed_with_launch_delays", step.with_launch},
                                             {"replayed", step.replayed},
                                             {"ideal", step.ideal},
                                             {"by_dp_rank", r.by_dp_rank_per_step[s]}};
  }
  j["mitigations"] = nlohmann::json::object();
  for (const auto& m : r.mitigations) {
    j["mitigations"][m.name] = {{"mean_step_time", m.mean_step_time},
                                {"slowdown", m.slowdown},
                                {"recovered", m.recovered},
                                {m.cost_name, m.cost}};
  }
  return j;
}

double worst_error(const replay::WhatIfReport& r, bool with_launch) {
  double worst = 0.0;
  for (const auto& s : r.steps) {
    worst =
        std::max(worst, std::abs((with_launch ? s.with_launch : s.replayed) / s.recorded - 1.0));
  }
  return worst;
}

void print_text(const replay::OpGraph& graph, const replay::WhatIfReport& r) {
  const auto& t = graph.timeline();
  std::cout << fmt::format("{}: {} ops, {} steps, dp {} × pp {}\n",
                           t.path,
                           t.ops.size(),
                           t.steps.size(),
                           t.layout.dp_size,
                           t.layout.pp_size);
  std::cout << fmt::format(
      "replay fidelity: worst step error {:.2f}% with launch delays, {:.2f}% without\n",
      100 * worst_error(r, true),
      100 * worst_error(r, false));
  std::cout << fmt::format("slowdown S = {:.4f}\n", r.slowdown);
  std::cout << "by op type:";
  for (const auto& [name, value] : r.by_op_type)
    std::cout << fmt::format(" {}={:.4f}", name, value);
  std::cout << "\nby dp rank:";
  for (std::size_t k = 0; k < r.by_dp_rank.size(); ++k)
    std::cout << fmt::format(" {}={:.4f}", k, r.by_dp_rank[k]);
  std::cout << "\nby stage:";
  for (std::size_t k = 0; k < r.by_stage.size(); ++k)
    std::cout << fmt::format(" {}={:.4f}", k, r.by_stage[k]);
  std::cout << fmt::format("\nM_W = {:.4f}, M_S = {:.4f}\n", r.m_w, r.m_s);
  for (const auto& m : r.mitigations) {
    std::cout << fmt::format(
        "mitigation {}: slowdown {:.4f}, recovers {:.1f}% of S − 1, {} {:.4f}\n",
        m.name,
        m.slowdown,
        100 * m.recovered,
        m.cost_name,
        m.cost);
  }
}

/// Leaves the steps of `steps` out of the analysis; each must be in the timeline, and one must
/// stay.
void drop_steps(replay::OpTimeline& t, const std::vector<std::int64_t>& steps) {
  for (const std::int64_t s : steps) {
    if (std::find(t.steps.begin(), t.steps.end(), s) == t.steps.end()) {
      throw ConfigError(
          fmt::format("--drop-steps: no step {} in {}; got {}; expected steps of the "
                      "timeline",
                      s,
                      t.path,
                      s));
    }
  }
  const auto dropped = [&](std::int64_t s) {
    return std::find(steps.begin(), steps.end(), s) != steps.end();
  };
  std::erase_if(t.ops, [&](const replay::Op& op) { return dropped(op.step); });
  std::erase_if(t.steps, dropped);
  if (t.steps.empty()) {
    throw ConfigError(fmt::format(
        "--drop-steps: every step dropped; got {} steps; expected one left", steps.size()));
  }
}

int command_whatif(const WhatIfRequest& a) {
  check_options(a);
  std::optional<OutputFile> out_file;
  if (!a.timeline_out.empty()) out_file.emplace(a.timeline_out, "--timeline-out");
  std::optional<replay::JobLayout> layout;
  if (!a.meta.empty()) layout = replay::read_job_layout(a.meta);
  replay::OpTimeline timeline = replay::read_op_timeline(a.path, layout, read_op_map(a), a.meta);
  drop_steps(timeline, a.drop_steps);
  WhatIfRequest checked = a;
  if (timeline.layout.dp_size <= checked.options.backup_replicas && timeline.layout.dp_size > 1) {
    throw ConfigError(
        fmt::format("--backup: must be below the data-parallel size; got {}; expected 1..{}",
                    a.options.backup_replicas,
                    timeline.layout.dp_size - 1));
  }
  checked.options.compute = statistic_named(a.ideal_compute, "--ideal-compute");
  checked.options.communication = statistic_named(a.ideal_comm, "--ideal-comm");
  const replay::OpGraph graph(timeline);
  const replay::WhatIfReport report = replay::analyse_whatif(graph, checked.options);
  if (out_file) out_file->commit(ideal_timeline(graph, report).dump() + "\n");
  if (a.json) {
    std::cout << report_json(graph, report).dump(2) << '\n';
  } else {
    print_text(graph, report);
  }
  return 0;
}

}  // namespace

Subcommand add_whatif_command(CLI::App& app) {
  auto a = std::make_shared<WhatIfRequest>();
  auto* cmd = app.add_subcommand("whatif", "what-if replay of an op-level training timeline");
  cmd->add_option("timeline", a->path, "Chrome trace of the job's ops (plain or gzip)")->required();
  cmd->add_option("--meta", a->meta, "the job's layout (meta-*.yaml)");
  cmd->add_option("--op-map", a->op_map, "JSON object: event name → op type name");
  cmd->add_flag("--strict-names", a->strict_names, "an event name not in the map is an error");
  cmd->add_flag("--json", a->json, "print JSON");
  add_output_option(*cmd,
                    "--timeline-out",
                    a->timeline_out,
                    "write the ideal timeline (Chrome trace JSON)",
                    false);
  cmd->add_option(
      "--ideal-compute", a->ideal_compute, "ideal duration of compute ops: mean or median");
  cmd->add_option(
      "--ideal-comm", a->ideal_comm, "ideal duration of communication ops: mean or median");
  cmd->add_option(
      "--backup", a->options.backup_replicas, "(a): replicas the gradient reduction goes without");
  cmd->add_option(
      "--deadline", a->options.deadline, "(b): compute deadline over the ideal compute time");
  cmd->add_option("--drop-steps", a->drop_steps, "steps left out of the analysis (S,S,...)")
      ->delimiter(',');
  return {cmd, [a] { return command_whatif(*a); }};
}

}  // namespace stragglersim::experiments
