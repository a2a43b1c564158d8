#pragma once
// Presentation of a code analysis (the `stragglersim codes` subcommand): text table and JSON.

#include <nlohmann/json.hpp>
#include <span>
#include <string>

#include "codes/code_analysis.h"

namespace stragglersim::experiments {

using codes::CodeReport;
using codes::CodeReportOptions;
using codes::DecoderSummary;
using codes::StabilityRow;

/// A readable multi-line table.
[[nodiscard]] std::string format_table(const CodeReport& report);
[[nodiscard]] nlohmann::json to_json(const CodeReport& report);

/// A Markdown table of the rows.
[[nodiscard]] std::string format_stability_table(std::span<const StabilityRow> rows);

}  // namespace stragglersim::experiments
