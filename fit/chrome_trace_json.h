#pragma once
// The pieces every reader of Chrome trace-event JSON shares (fit/trace_import.h's per-step sums,
// sim/replay/op_timeline.h's op timelines): the file's bytes, plain or gzip; the parsed document
// and its event list; the fields of one event, each refused with the event's index.
//
// Messages: "PATH: message (expected ...)" for the file, "PATH: event N: message (expected ...)"
// for event N (0-based in the event list). All throw TraceFileError (exit status 2).

#include <cstddef>
#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>

namespace stragglersim::sim {

/// Throws TraceFileError "PATH: MESSAGE".
[[noreturn]] void fail_file(const std::string& path, const std::string& message);
/// Throws TraceFileError "PATH: event N: MESSAGE".
[[noreturn]] void fail_at_event(const std::string& path,
                                std::size_t event,
                                const std::string& message);

/// The bytes of a file, decompressed when it is gzip (zlib reads plain files as they are); a
/// file that cannot be opened or a truncated or corrupt gzip stream is an error.
std::string read_maybe_gzip(const std::string& path);

/// The JSON document of `text`; invalid JSON and nesting deeper than 64 levels are errors.
nlohmann::json parse_trace_json(const std::string& path, const std::string& text);

/// The event list of a Chrome trace: the document itself or its `traceEvents` list.
const nlohmann::json& event_list(const std::string& path, const nlohmann::json& doc);

/// What a value is, for an error message: scalars as written (cut at 40 characters),
/// containers by their type.
std::string shown(const nlohmann::json& v);

/// `object[key]` as an integer; missing or not an integer is an error of event `n`, the field
/// called `name` and described by `expected`.
std::int64_t integer_field(const std::string& path,
                           std::size_t n,
                           const nlohmann::json& object,
                           const char* key,
                           const char* name,
                           const char* expected);

/// `event["dur"]`: a finite number ≥ 0 (microseconds), else an error of event `n`.
double duration_field(const std::string& path, std::size_t n, const nlohmann::json& event);

}  // namespace stragglersim::sim
