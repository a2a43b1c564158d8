#pragma once
// The field syntax shared by the readers of measured-time tables (fit/delay_trace.h and the CSV
// importer of fit/trace_import.h): fields split at commas, a field in double quotes may hold
// commas ("" is a quote), spaces and tabs around a field (and a CR line end) are dropped.

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace stragglersim::sim {

/// `s` without leading and trailing spaces, tabs, CR, VT and FF.
std::string_view trim_field(std::string_view s);

/// The fields of one line, each trimmed.
std::vector<std::string> split_csv_fields(std::string_view line);

/// An integer ≥ 0 written in decimal without a sign; nullopt for anything else.
std::optional<std::int64_t> parse_csv_index(std::string_view token);

/// A double as std::from_chars reads it (also "inf", "nan"), with an optional leading '+';
/// nullopt for anything else, including trailing characters.
std::optional<double> parse_csv_number(std::string_view token);

}  // namespace stragglersim::sim
