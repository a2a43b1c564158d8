// Fuzz target: the trace importers (fit/trace_import.h), the input read as a CSV table (native
// and Alibaba PAI column names) and as a Chrome trace (plain or, through zlib, gzip; grouped by
// data-parallel rank and by rank). Every input must import or raise TraceFileError, and every
// imported trace must read back through read_delay_trace with the same workers and iterations.

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <vector>

#include "fit/delay_trace.h"
#include "fit/trace_import.h"
#include "tests/fuzz/fuzz_support.h"

namespace {

using namespace stragglersim;

void write_and_read_back(const sim::TimeTable& table) {
  for (const auto missing : {sim::MissingCells::kDrop, sim::MissingCells::kCensor}) {
    sim::ImportedTrace out;
    try {
      out = sim::write_imported_trace(table, missing);
    } catch (const sim::TraceFileError&) {
      continue;  // nothing complete to write under drop
    }
    const std::string path = fuzz::write_input(
        reinterpret_cast<const std::uint8_t*>(out.csv.data()), out.csv.size(), "output.csv");
    const sim::DelayTrace back = sim::read_delay_trace(path);  // must not throw
    if (back.workers != out.workers || back.per_iteration.size() != out.iterations ||
        back.censored_lines.size() != out.censored_cells) {
      std::abort();
    }
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string path = fuzz::write_input(data, size, "input.trace");
  sim::CsvImportOptions pai;
  pai.iteration_column = "time";
  pai.seconds_column = "batch_time_norm";
  pai.scale = 1e-3;
  for (const auto& options : {sim::CsvImportOptions{}, pai}) {
    try {
      write_and_read_back(sim::import_csv_times(path, options));
    } catch (const sim::TraceFileError&) {
    }
  }
  for (const auto group_by : {sim::TraceGrouping::kDataParallelRank, sim::TraceGrouping::kRank}) {
    sim::ChromeImportOptions options;
    options.group_by = group_by;
    try {
      write_and_read_back(sim::import_chrome_times(path, options));
    } catch (const sim::TraceFileError&) {
    }
  }
  return 0;
}
