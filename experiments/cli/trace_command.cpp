// `stragglersim trace import FILE --format csv|chrome ... --out times.csv`: measured times in
// another layout converted to the trace layout iteration,worker,seconds (docs/traces.md).

#include <fmt/format.h>

#include <iostream>
#include <memory>
#include <string>
#include <vector>

#include "experiments/cli/commands.h"
#include "experiments/entry_points.h"
#include "fit/trace_import.h"

namespace stragglersim::experiments {
namespace {

/// "0=a 1=b …": written index = source label.
template <class Labels>
std::string mapping(const Labels& labels) {
  std::string out;
  for (std::size_t k = 0; k < labels.size(); ++k) {
    out += fmt::format("{}{}={}", k == 0 ? "" : " ", k, labels[k]);
  }
  return out;
}

void print_summary(const TraceImportRequest& a,
                   const sim::TimeTable& table,
                   const sim::ImportedTrace& t) {
  std::cout << fmt::format(
      "{}: {} workers, {} iterations written to {}; {} missing cells: {} iterations dropped, {} "
      "times censored{}\n",
      a.more_paths.empty() ? a.path : fmt::format("{} and {} more", a.path, a.more_paths.size()),
      t.workers,
      t.iterations,
      a.out,
      t.missing_cells,
      t.dropped_iterations,
      t.censored_cells,
      table.repeated_rows > 0 ? fmt::format("; {} repeated rows merged", table.repeated_rows)
                              : std::string());
  const char* ids = a.format == "csv"      ? "worker ids"
                    : table.ranks_by_file  ? "ranks (one file each)"
                    : a.group_by == "rank" ? "pid/tid pairs"
                                           : "pids";
  std::cout << fmt::format("workers 0..{} are the source's {} in sorted order: {}\n",
                           t.workers - 1,
                           ids,
                           mapping(table.worker_ids));
  std::cout << fmt::format(
      "times written: median {:.6g}, mean {:.6g}, max {:.6g}\n", t.median, t.mean, t.max);
  if (table.renumbered) {
    std::cout << fmt::format(
        "iterations 0..{} are the steps: {}\n", t.iterations - 1, mapping(t.source_iterations));
  } else {
    std::cout << fmt::format("iterations keep the source's numbers: {}..{}\n",
                             t.source_iterations.front(),
                             t.source_iterations.back());
  }
}

int command_trace_import(const TraceImportRequest& a) {
  const TraceImportResult r = import_trace(a);
  print_summary(a, r.table, r.trace);
  return 0;
}

}  // namespace

Subcommand add_trace_command(CLI::App& app) {
  auto args = std::make_shared<TraceImportRequest>();
  auto* cmd = app.add_subcommand("trace", "measured-time files: import other layouts");
  cmd->require_subcommand(1);
  auto* import = cmd->add_subcommand(
      "import", "convert a CSV table or a Chrome trace to iteration,worker,seconds");
  auto files = std::make_shared<std::vector<std::string>>();
  import->add_option("files", *files, "the source file (chrome: one or more, one per rank)")
      ->required();
  import->add_option("--format", args->format, "csv or chrome")->required();
  struct OnlyFor {
    CLI::Option* option;
    bool csv;
  };
  const std::vector<OnlyFor> only_for = {
      {import->add_option("--iteration", args->csv.iteration_column, "csv: iteration column"),
       true},
      {import->add_option("--worker", args->csv.worker_column, "csv: worker id column"), true},
      {import->add_option("--seconds", args->csv.seconds_column, "csv: time column"), true},
      {import->add_option("--scale", args->csv.scale, "csv: seconds per unit of the time column"),
       true},
      {import->add_option("--events", args->chrome.events, "chrome: event names summed")
           ->delimiter(','),
       false},
      {import->add_option("--group-by", args->group_by, "chrome: dp_rank (pid) or rank (pid, tid)"),
       false},
  };
  import->add_option("--missing", args->missing, "drop or censor iterations with missing times");
  import->add_option("--out", args->out, "the trace file written")->required();
  for (CLI::Option* option : import->get_options()) {
    if (option->get_required()) {
      option->default_str("");  // a required option has no default to show
    }
  }
  return {cmd, [args, only_for, files] {
            args->path = files->front();
            args->more_paths.assign(files->begin() + 1, files->end());
            for (const auto& o : only_for) {
              if (o.option->count() > 0) {
                (o.csv ? args->csv_only_given : args->chrome_only_given)
                    .push_back(o.option->get_name());
              }
            }
            return command_trace_import(*args);
          }};
}

}  // namespace stragglersim::experiments
