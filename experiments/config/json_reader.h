#pragma once
// Strict reading of one JSON object of a config: every value is type- and range-checked, every
// key must be consumed (a typo is an error, not silently ignored), and every error names the
// file and the JSON pointer. Defaults taken are written into `resolved()`, so the summary can
// record the config as run.

#include <cstdint>
#include <initializer_list>
#include <limits>
#include <nlohmann/json.hpp>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

namespace stragglersim::experiments {

class JsonReader {
 public:
  /// `value` must outlive the reader. Throws ConfigError when `value` is not an object.
  JsonReader(const nlohmann::json& value, std::string file, std::string pointer);

  [[nodiscard]] const std::string& file() const { return file_; }
  [[nodiscard]] const std::string& pointer() const { return pointer_; }
  /// JSON pointer of `key` inside this object.
  [[nodiscard]] std::string pointer_of(std::string_view key) const;
  /// Throws ConfigError "<file>:<pointer>/<key>: <message>". A message starting "missing required
  /// key" gets "; got '<near>' (did you mean '<key>'?)" after those words when the object has a
  /// key not read yet that is near `key` (nearest_name's rule, both at least 3 characters).
  [[noreturn]] void fail(std::string_view key, std::string_view message) const;
  /// Throws ConfigError "<file>:<pointer>/<key>: <problem>; got <value>; expected <expected>".
  [[noreturn]] void fail_value(std::string_view key,
                               std::string_view problem,
                               const nlohmann::json& got,
                               std::string_view expected) const;

  [[nodiscard]] bool has(std::string_view key) const;
  /// Declares an optional key without default as valid: finish() lists it among the valid keys
  /// even when this object does not have it.
  void allow(std::string_view key);
  [[nodiscard]] bool is_null(std::string_view key) const;
  /// The raw value (marks the key used). Illegal if absent.
  [[nodiscard]] const nlohmann::json& raw(std::string_view key);
  /// The raw value, or `fallback` (recorded in resolved()) when absent; marks the key used.
  [[nodiscard]] nlohmann::json raw_or(std::string_view key, const nlohmann::json& fallback);

  /// Integer in [min, max]; `fallback` when absent (required when nullopt).
  std::int64_t integer(std::string_view key,
                       std::optional<std::int64_t> fallback,
                       std::int64_t min = std::numeric_limits<std::int64_t>::min(),
                       std::int64_t max = std::numeric_limits<std::int64_t>::max());
  /// Finite number; `positive` requires > 0, else >= min.
  double number(std::string_view key,
                std::optional<double> fallback,
                double min = -std::numeric_limits<double>::infinity(),
                double max = std::numeric_limits<double>::infinity());
  double positive(std::string_view key, std::optional<double> fallback);
  std::string string(std::string_view key, std::optional<std::string> fallback);
  bool boolean(std::string_view key, std::optional<bool> fallback);
  /// A string among `values` ("unknown <what> '<v>'; [did you mean 'a'? ]valid values are: a, b").
  std::string choice(std::string_view key,
                     std::string_view what,
                     const std::vector<std::string>& values,
                     std::optional<std::string> fallback);
  /// A nested object reader (required).
  JsonReader object(std::string_view key);
  /// Rejects keys never read: "<file>:<pointer>/<key>: unknown key '<key>'; [did you mean
  /// '<nearest>'? ]valid keys are: ..." (the suggestion from nearest_name).
  void finish() const;
  /// Rejects keys outside `valid` (a factory row's keys), listing `valid` sorted.
  void finish(std::vector<std::string> valid) const;
  /// This object with the defaults that were taken filled in (nested objects included once
  /// their readers are merged back with `merge`).
  [[nodiscard]] const nlohmann::json& resolved() const { return resolved_; }
  /// Stores a nested reader's resolved object under `key`.
  void merge(std::string_view key, const JsonReader& child);
  /// Stores a resolved object under `key` (one read and resolved before).
  void merge(std::string_view key, const nlohmann::json& resolved);

 private:
  const nlohmann::json* value_;
  std::string file_;
  std::string pointer_;
  /// A key of this object not read yet and near `key` by nearest_name's rule, else "".
  [[nodiscard]] std::string misspelling_of(std::string_view key) const;

  std::set<std::string, std::less<>> used_;
  nlohmann::json resolved_;
};

/// Deepest nesting of arrays and objects a config may have (configs need a handful).
inline constexpr std::size_t kMaxJsonDepth = 64;

/// Parses JSON text of `file` (`prefix`: the JSON pointer the text sits at, "" for a whole
/// file). ConfigError on a syntax error ("<file>[:<prefix>]:<line>:<column>: invalid JSON: ..."),
/// on nesting deeper than kMaxJsonDepth or a number outside double range (both "<file>:<pointer>:
/// ...").
nlohmann::json parse_json(std::string_view text,
                          const std::string& file,
                          const std::string& prefix = "");

/// "a, b, c".
std::string join(const std::vector<std::string>& values);

/// Levenshtein distance (insertions, deletions and substitutions of one byte each cost 1).
std::size_t edit_distance(std::string_view a, std::string_view b);

/// The entry of `candidates` nearest to `word` by edit_distance (the first in alphabetical order
/// on ties) when it is close enough to be a typo: at most min(2, max(1, longer length / 3))
/// edits away; nullopt otherwise (and when `word` is one of them).
std::optional<std::string> nearest_name(std::string_view word,
                                        const std::vector<std::string>& candidates);

/// "; did you mean 'x'? " when nearest_name finds x, else "; ": what goes between "unknown ...
/// 'word'" and "valid ... are: ..." in every unknown-name message.
std::string did_you_mean(std::string_view word, const std::vector<std::string>& candidates);

}  // namespace stragglersim::experiments
