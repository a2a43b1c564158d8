// `stragglersim check [--quick] [--out DIR]`: the paper's claims held against simulation
// (docs/model.md §6). Each row is "claim · theory · simulation · tolerance · PASS/FAIL"; the exit
// status is 0 only if every row passes. Every tolerance is 4 standard errors of the simulated
// estimate (|z| < 4: a false alarm has probability ~6e-5 per row), except where a row says
// otherwise. All seeds are fixed, so a run is reproducible.
//
// This file holds the table of groups the command runs; the groups live in one file per theory
// they check (experiments/cli/check_claims.h lists them).

#include <fmt/format.h>

#include <algorithm>
#include <filesystem>
#include <functional>
#include <iostream>
#include <iterator>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "experiments/cli/check_claims.h"
#include "experiments/cli/commands.h"
#include "experiments/config/run_plan.h"
#include "experiments/output_file.h"
#include "models/worker_pool.h"

namespace stragglersim::experiments {
namespace {

using check::CheckRow;

/// One group of claims: appends its rows (and writes its own file under --out, if any).
using RowsOf = std::function<void(std::vector<CheckRow>&)>;

/// The groups in the order their rows are printed. Each has its own seeds and files, so they
/// run at once on the machine's cores and the output is the same bytes as one after another.
std::vector<RowsOf> row_groups(bool quick, const std::filesystem::path& out) {
  return {
      [quick](auto& rows) { check::iteration_time_rows(quick, rows); },
      [quick](auto& rows) { check::anytime_rows(quick, rows); },
      [quick](auto& rows) { check::multi_message_rows(quick, rows); },
      [quick](auto& rows) { check::erasure_rows(quick, rows); },
      [quick](auto& rows) { check::proportional_rows(quick, rows); },
      [quick](auto& rows) { check::proportional_cyclic_rows(quick, rows); },
      [quick](auto& rows) { check::order_statistics_rows(quick, rows); },
      [quick, out](auto& rows) { check::speedup_rows(quick, rows, out); },
      [quick](auto& rows) { check::estimator_rows(quick, rows); },
      [quick, out](auto& rows) { check::bound_rows(quick, rows, out); },
      [quick](auto& rows) { check::floor_rows(quick, rows); },
      [quick](auto& rows) { check::coded_bound_rows(quick, rows); },
      [quick, out](auto& rows) { check::exact_curve_rows(quick, rows, out); },
      [quick](auto& rows) { check::logistic_rows(quick, rows); },
      [quick](auto& rows) { check::policy_rows(quick, rows); },
      [quick](auto& rows) { check::persistent_rows(quick, rows); },
      [](auto& rows) { check::update_time_rows(rows); },
      [quick](auto& rows) { check::time_optimal_rows(quick, rows); },
      [quick](auto& rows) { check::collective_rows(quick, rows); },
  };
}

/// Every group's rows, in group order; the groups run on a pool of the machine's cores.
std::vector<CheckRow> rows_of_every_group(const std::vector<RowsOf>& groups) {
  std::vector<std::vector<CheckRow>> per_group(groups.size());
  models::WorkerPool pool(std::min(hardware_cores(), static_cast<int>(groups.size())));
  pool.run(static_cast<int>(groups.size()), [&](int g) {
    groups[static_cast<std::size_t>(g)](per_group[static_cast<std::size_t>(g)]);
  });
  std::vector<CheckRow> rows;
  for (auto& group : per_group) {
    std::move(group.begin(), group.end(), std::back_inserter(rows));
  }
  return rows;
}

int command_check(bool quick, const std::string& out_dir) {
  std::filesystem::path out;
  if (!out_dir.empty()) {
    check_output_folder(out_dir, "--out");
    out = out_dir;
    std::filesystem::create_directories(out);
  }
  const std::vector<RowsOf> groups = row_groups(quick, out);
  const std::vector<CheckRow> rows = rows_of_every_group(groups);
  int failed = 0;
  std::string csv = "claim,theory,simulation,tolerance,result\n";
  std::cout << fmt::format(
      "{:<78} {:>12} {:>12} {:>10}  {}\n", "claim", "theory", "simulation", "tolerance", "result");
  for (const auto& r : rows) {
    failed += r.pass ? 0 : 1;
    std::cout << fmt::format("{:<78} {:>12.6g} {:>12.6g} {:>10.3g}  {}\n",
                             r.claim,
                             r.theory,
                             r.simulation,
                             r.tolerance,
                             r.pass ? "PASS" : "FAIL");
    csv += fmt::format("\"{}\",{},{},{},{}\n",
                       r.claim,
                       r.theory,
                       r.simulation,
                       r.tolerance,
                       r.pass ? "PASS" : "FAIL");
  }
  std::cout << fmt::format("check: {} of {} claims hold{}\n",
                           rows.size() - static_cast<std::size_t>(failed),
                           rows.size(),
                           quick ? " (quick)" : "");
  if (!out.empty()) {
    write_file_atomically(out / "check.csv", csv);
  }
  return failed == 0 ? 0 : 1;
}

}  // namespace

Subcommand add_check_command(CLI::App& app) {
  auto quick = std::make_shared<bool>(false);
  auto out = std::make_shared<std::string>();
  auto* cmd = app.add_subcommand("check", "hold the simulator against the theory (PASS/FAIL rows)");
  cmd->add_flag("--quick",
                *quick,
                "fewer iterations, worker-by-worker n up to 4096 and order statistics at 2^20");
  add_output_option(
      *cmd, "-o,--out", *out, "also write check.csv, speedup.csv and bound.csv here", true);
  return {cmd, [quick, out] { return command_check(*quick, *out); }};
}

}  // namespace stragglersim::experiments
