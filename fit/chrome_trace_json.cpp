#include "fit/chrome_trace_json.h"

#include <fmt/format.h>
#include <zlib.h>

#include <cmath>
#include <limits>
#include <memory>
#include <string_view>
#include <vector>

#include "fit/delay_trace.h"

namespace stragglersim::sim {

namespace {

// A Chrome event needs 4 levels ({"traceEvents": [{"args": {...}}]}); deeper documents are
// refused before the value tree (whose destructor and dump() recurse) is built.
constexpr int kMaxJsonDepth = 64;

struct GzCloser {
  void operator()(gzFile_s* f) const { gzclose(f); }
};

/// The deepest nesting of arrays and objects in JSON text, brackets inside strings skipped (an
/// upper bound for any prefix of invalid text too).
int max_nesting(std::string_view text) {
  int depth = 0;
  int deepest = 0;
  bool in_string = false;
  for (std::size_t k = 0; k < text.size(); ++k) {
    const char c = text[k];
    if (in_string) {
      if (c == '\\') {
        ++k;
      } else if (c == '"') {
        in_string = false;
      }
    } else if (c == '"') {
      in_string = true;
    } else if (c == '[' || c == '{') {
      deepest = std::max(deepest, ++depth);
    } else if (c == ']' || c == '}') {
      --depth;
    }
  }
  return deepest;
}

}  // namespace

[[noreturn]] void fail_file(const std::string& path, const std::string& message) {
  throw TraceFileError(fmt::format("{}: {}", path, message));
}

[[noreturn]] void fail_at_event(const std::string& path,
                                std::size_t event,
                                const std::string& message) {
  throw TraceFileError(fmt::format("{}: event {}: {}", path, event, message));
}

/// The bytes of a file, decompressed when it is gzip (zlib reads plain files as they are).
std::string read_maybe_gzip(const std::string& path) {
  std::unique_ptr<gzFile_s, GzCloser> file(gzopen(path.c_str(), "rb"));
  if (!file) {
    fail_file(path,
              "cannot open file (expected a readable Chrome trace-event JSON file, plain or gzip)");
  }
  std::string text;
  std::vector<char> buffer(std::size_t{1} << 20);
  for (;;) {
    const int got = gzread(file.get(), buffer.data(), static_cast<unsigned>(buffer.size()));
    int code = Z_OK;
    const char* message = got <= 0 ? gzerror(file.get(), &code) : nullptr;
    if (got < 0 || code != Z_OK) {
      // zlib prefixes its message with the path it was given; the path is said once.
      std::string_view m = message != nullptr ? message : "?";
      if (const std::string prefix = path + ": "; m.starts_with(prefix)) {
        m.remove_prefix(prefix.size());
      }
      fail_file(path, fmt::format("gzip error: {} (expected a complete gzip stream)", m));
    }
    if (got == 0) break;
    text.append(buffer.data(), static_cast<std::size_t>(got));
  }
  return text;
}

nlohmann::json parse_trace_json(const std::string& path, const std::string& text) {
  // Checked on the text: nlohmann's parser callback, which could stop at a depth, makes parsing
  // the ByteDance timelines ten times slower.
  if (max_nesting(text) > kMaxJsonDepth) {
    fail_file(
        path,
        fmt::format("nesting too deep; got more than {} levels (expected Chrome trace-event JSON)",
                    kMaxJsonDepth));
  }
  try {
    return nlohmann::json::parse(text);
  } catch (const nlohmann::json::exception& e) {
    fail_file(path, fmt::format("invalid JSON: {} (expected Chrome trace-event JSON)", e.what()));
  }
}

const nlohmann::json& event_list(const std::string& path, const nlohmann::json& doc) {
  if (doc.is_array()) return doc;
  if (doc.is_object()) {
    const auto at = doc.find("traceEvents");
    if (at != doc.end() && at->is_array()) return *at;
  }
  fail_file(path,
            fmt::format("not a Chrome trace; got a JSON {} (expected a list of events or an object "
                        "with a 'traceEvents' list)",
                        doc.type_name()));
}

/// What a value is, for an error message: scalars as written, containers by their type.
std::string shown(const nlohmann::json& v) {
  if (v.is_structured()) return std::string("a JSON ") + v.type_name();
  std::string text = v.dump();
  return text.size() > 40 ? text.substr(0, 40) + "..." : text;
}

std::int64_t integer_field(const std::string& path,
                           std::size_t n,
                           const nlohmann::json& object,
                           const char* key,
                           const char* name,
                           const char* expected) {
  const auto at = object.find(key);
  if (at == object.end()) {
    fail_at_event(path, n, fmt::format("no '{}' (expected {})", name, expected));
  }
  if (!at->is_number_integer() ||
      (at->is_number_unsigned() &&
       at->get<std::uint64_t>() >
           static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max()))) {
    fail_at_event(
        path,
        n,
        fmt::format("'{}' is not an integer; got {} (expected {})", name, shown(*at), expected));
  }
  return at->get<std::int64_t>();
}

double duration_field(const std::string& path, std::size_t n, const nlohmann::json& event) {
  constexpr const char* kExpected = "a duration ≥ 0 in microseconds";
  const auto at = event.find("dur");
  if (at == event.end()) {
    fail_at_event(path, n, fmt::format("no 'dur' (expected {})", kExpected));
  }
  if (!at->is_number() || !std::isfinite(at->get<double>()) || at->get<double>() < 0.0) {
    fail_at_event(
        path,
        n,
        fmt::format("'dur' is not a number ≥ 0; got {} (expected {})", shown(*at), kExpected));
  }
  return at->get<double>();
}

}  // namespace stragglersim::sim
