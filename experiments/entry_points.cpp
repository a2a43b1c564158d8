#include "experiments/entry_points.h"

#include <fmt/format.h>

#include <algorithm>

#include "experiments/config/config_error.h"
#include "experiments/config/factories.h"
#include "experiments/config/json_reader.h"
#include "experiments/config/memory_budget.h"
#include "experiments/config/predictions.h"
#include "models/base/random_stream.h"

namespace stragglersim::experiments {

nlohmann::json theory_report(const RunPlan& plan) {
  nlohmann::json p = predictions(plan);
  p["name"] = plan.name;
  return p;
}

CodeReport inspect_code(const CodeRequest& request) {
  // The command line checks this range while parsing; other callers get the same bound here.
  if (request.workers < 1 || request.workers > 100000) {
    throw ConfigError(fmt::format(
        "{}: workers out of range; got {}; expected 1 to 100000", request.source, request.workers));
  }
  if (request.samples < 1) {
    throw ConfigError(fmt::format(
        "{}: samples out of range; got {}; expected at least 1", request.source, request.samples));
  }
  JsonReader reader(request.code, request.source, "/code");
  const std::string kind = reader.choice("kind", "code", names_of(code_factories()), std::nullopt);
  const ClusterShape shape{request.source,
                           request.workers,
                           request.partitions > 0 ? request.partitions : request.workers,
                           request.partitions > 0,
                           derive_seed(request.seed, static_cast<std::uint64_t>(Stream::kCode))};
  // Refuse before building: a dense code for 10⁵ workers needs hundreds of GB.
  const double d = std::min(request.code.contains("d") && request.code["d"].is_number()
                                ? request.code["d"].get<double>()
                                : 0.0,
                            static_cast<double>(shape.workers));
  const double bytes = code_footprint(kind, shape.workers, shape.partitions, d).bytes;
  if (!(bytes <= static_cast<double>(memory_limit()))) {
    throw ConfigError(fmt::format(
        "--workers: code '{}' would need about {} of memory; got {}; expected at most {} "
        "(--max-memory)",
        kind,
        format_bytes(bytes),
        request.workers,
        format_bytes(static_cast<double>(memory_limit()))));
  }
  if (request.include_assignment &&
      static_cast<double>(shape.workers) * static_cast<double>(shape.partitions) > 0x1p24) {
    throw ConfigError(fmt::format(
        "--csv: B is too large to write as CSV; got {} x {}; expected workers x partitions at "
        "most 16777216",
        shape.workers,
        shape.partitions));
  }
  std::shared_ptr<const codes::GradientCode> code;
  for (const auto& row : code_factories()) {
    if (row.name == kind) {
      // The decoder key is valid in a code object; the report covers every decoder.
      if (reader.has("decoder")) {
        (void)reader.choice("decoder", "decoder", {"exact", "one_step", "optimal"}, {});
      }
      code = row.make(reader, shape);
      reader.finish(keys_of(row, kCodeKeys));
    }
  }
  if (request.stragglers > request.workers || request.wait_for > request.workers) {
    throw ConfigError(
        fmt::format("{}: --stragglers and --wait-for must be at most "
                    "workers = {}; got {} and {}",
                    request.source,
                    request.workers,
                    request.stragglers,
                    request.wait_for));
  }
  CodeReportOptions options;
  options.stragglers = request.stragglers;
  options.wait_for = request.wait_for;
  options.samples = request.samples;
  options.seed = request.seed;
  options.include_assignment = request.include_assignment;
  return analyse_code(*code, options);
}

nlohmann::json code_report_json(const CodeReport& report) {
  nlohmann::json j = to_json(report);
  j.erase("assignment_csv");
  return j;
}

}  // namespace stragglersim::experiments
