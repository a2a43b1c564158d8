#include "experiments/config/json_reader.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "experiments/config/config_error.h"

namespace stragglersim::experiments {

std::string join(const std::vector<std::string>& values) {
  std::string out;
  for (const auto& v : values) {
    out += out.empty() ? v : ", " + v;
  }
  return out;
}

std::size_t edit_distance(std::string_view a, std::string_view b) {
  // One row of the Levenshtein table at a time: insertions, deletions, substitutions cost 1.
  std::vector<std::size_t> row(b.size() + 1);
  for (std::size_t j = 0; j <= b.size(); ++j) {
    row[j] = j;
  }
  for (std::size_t i = 1; i <= a.size(); ++i) {
    std::size_t diagonal = row[0];
    row[0] = i;
    for (std::size_t j = 1; j <= b.size(); ++j) {
      const std::size_t above = row[j];
      row[j] = std::min({row[j] + 1, row[j - 1] + 1, diagonal + (a[i - 1] == b[j - 1] ? 0 : 1)});
      diagonal = above;
    }
  }
  return row[b.size()];
}

std::optional<std::string> nearest_name(std::string_view word,
                                        const std::vector<std::string>& candidates) {
  std::vector<std::string> sorted = candidates;
  std::sort(sorted.begin(), sorted.end());
  std::optional<std::string> nearest;
  std::size_t best = std::string::npos;
  for (const auto& c : sorted) {
    if (c == word) {
      return std::nullopt;
    }
    const std::size_t d = edit_distance(word, c);
    if (d < best) {
      best = d;
      nearest = c;
    }
  }
  if (!nearest) {
    return std::nullopt;
  }
  const std::size_t longer = std::max(word.size(), nearest->size());
  if (best > std::min<std::size_t>(2, std::max<std::size_t>(1, longer / 3))) {
    return std::nullopt;
  }
  return nearest;
}

std::string did_you_mean(std::string_view word, const std::vector<std::string>& candidates) {
  const auto nearest = nearest_name(word, candidates);
  return nearest ? fmt::format("; did you mean '{}'? ", *nearest) : std::string("; ");
}

namespace {

/// `text` with control characters written as JSON writes them (\u0000 ...): a NUL in a key or
/// value would otherwise end the C string of the error message there.
std::string printable(std::string_view text) {
  std::string out;
  for (const char c : text) {
    const auto u = static_cast<unsigned char>(c);
    if (u < 0x20 || u == 0x7f) {
      out += fmt::format("\\u{:04x}", u);
    } else {
      out += c;
    }
  }
  return out;
}

std::string escape_pointer_token(std::string_view key) {
  std::string out;
  for (const char c : key) {
    if (c == '~') {
      out += "~0";
    } else if (c == '/') {
      out += "~1";
    } else {
      out += c;
    }
  }
  return printable(out);
}

}  // namespace

JsonReader::JsonReader(const nlohmann::json& value, std::string file, std::string pointer)
    : value_(&value), file_(std::move(file)), pointer_(std::move(pointer)), resolved_(value) {
  if (!value.is_object()) {
    throw ConfigError(fmt::format("{}:{}: wrong type; got {}; expected an object",
                                  file_,
                                  pointer_.empty() ? "/" : pointer_,
                                  value.dump()));
  }
}

std::string JsonReader::pointer_of(std::string_view key) const {
  return pointer_ + "/" + escape_pointer_token(key);
}

std::string JsonReader::misspelling_of(std::string_view key) const {
  // A key of three or more characters only: one-letter keys (d, s, r) are one edit from each
  // other, and a present valid key would be taken for a misspelling.
  if (key.size() < 3) {
    return {};
  }
  const std::vector<std::string> wanted = {std::string(key)};
  for (const auto& item : value_->items()) {
    if (item.key().size() >= 3 && !used_.contains(item.key()) && nearest_name(item.key(), wanted)) {
      return item.key();
    }
  }
  return {};
}

void JsonReader::fail(std::string_view key, std::string_view message) const {
  // A required key that is missing because it was misspelt: name the near key in the object,
  // which finish() would otherwise have reported as unknown after this error.
  constexpr std::string_view kMissing = "missing required key";
  if (message.starts_with(kMissing)) {
    if (const std::string near = misspelling_of(key); !near.empty()) {
      throw ConfigError(fmt::format("{}:{}: {}; got '{}' (did you mean '{}'?){}",
                                    file_,
                                    pointer_of(key),
                                    kMissing,
                                    printable(near),
                                    printable(key),
                                    message.substr(kMissing.size())));
    }
  }
  throw ConfigError(fmt::format("{}:{}: {}", file_, pointer_of(key), message));
}

void JsonReader::fail_value(std::string_view key,
                            std::string_view problem,
                            const nlohmann::json& got,
                            std::string_view expected) const {
  fail(key, fmt::format("{}; got {}; expected {}", problem, got.dump(), expected));
}

bool JsonReader::has(std::string_view key) const { return value_->contains(key); }

void JsonReader::allow(std::string_view key) { used_.emplace(key); }

bool JsonReader::is_null(std::string_view key) const {
  return has(key) && value_->at(std::string(key)).is_null();
}

const nlohmann::json& JsonReader::raw(std::string_view key) {
  used_.emplace(key);
  return value_->at(std::string(key));
}

nlohmann::json JsonReader::raw_or(std::string_view key, const nlohmann::json& fallback) {
  used_.emplace(key);
  if (!has(key)) {
    resolved_[std::string(key)] = fallback;
    return fallback;
  }
  return value_->at(std::string(key));
}

std::int64_t JsonReader::integer(std::string_view key,
                                 std::optional<std::int64_t> fallback,
                                 std::int64_t min,
                                 std::int64_t max) {
  used_.emplace(key);
  if (!has(key)) {
    if (!fallback) {
      fail(key, "missing required key; expected an integer");
    }
    resolved_[std::string(key)] = *fallback;
    return *fallback;
  }
  const auto& v = value_->at(std::string(key));
  const bool integral =
      v.is_number_integer() ||
      (v.is_number_float() && std::isfinite(v.get<double>()) &&
       v.get<double>() == std::floor(v.get<double>()) && std::abs(v.get<double>()) < 9.0e15);
  if (!integral) {
    fail_value(key, "wrong type", v, "an integer");
  }
  const auto x = v.is_number_unsigned() && v.get<std::uint64_t>() > static_cast<std::uint64_t>(max)
                     ? max
                     : (v.is_number_float() ? static_cast<std::int64_t>(v.get<double>())
                                            : v.get<std::int64_t>());
  if (v.is_number_unsigned() && v.get<std::uint64_t>() > static_cast<std::uint64_t>(max)) {
    fail_value(key, "out of range", v, fmt::format("an integer <= {}", max));
  }
  if (x < min || x > max) {
    const std::string expected = max == std::numeric_limits<std::int64_t>::max()
                                     ? fmt::format("an integer >= {}", min)
                                     : fmt::format("an integer in [{}, {}]", min, max);
    fail_value(key, "out of range", v, expected);
  }
  return x;
}

double JsonReader::number(std::string_view key,
                          std::optional<double> fallback,
                          double min,
                          double max) {
  used_.emplace(key);
  if (!has(key)) {
    if (!fallback) {
      fail(key, "missing required key; expected a number");
    }
    resolved_[std::string(key)] = *fallback;
    return *fallback;
  }
  const auto& v = value_->at(std::string(key));
  if (!v.is_number()) {
    fail_value(key, "wrong type", v, "a number");
  }
  const double x = v.get<double>();
  if (x < min || x > max) {
    std::string expected;
    if (std::isinf(max)) {
      expected = fmt::format("a number >= {}", min);
    } else if (std::isinf(min)) {
      expected = fmt::format("a number <= {}", max);
    } else {
      expected = fmt::format("a number in [{}, {}]", min, max);
    }
    fail_value(key, "out of range", v, expected);
  }
  return x;
}

double JsonReader::positive(std::string_view key, std::optional<double> fallback) {
  const double x = number(key, fallback);
  if (!(x > 0.0)) {
    fail_value(key, "out of range", value_->at(std::string(key)), "a number > 0");
  }
  return x;
}

std::string JsonReader::string(std::string_view key, std::optional<std::string> fallback) {
  used_.emplace(key);
  if (!has(key)) {
    if (!fallback) {
      fail(key, "missing required key; expected a string");
    }
    resolved_[std::string(key)] = *fallback;
    return *fallback;
  }
  const auto& v = value_->at(std::string(key));
  if (!v.is_string()) {
    fail_value(key, "wrong type", v, "a string");
  }
  return v.get<std::string>();
}

bool JsonReader::boolean(std::string_view key, std::optional<bool> fallback) {
  used_.emplace(key);
  if (!has(key)) {
    if (!fallback) {
      fail(key, "missing required key; expected true or false");
    }
    resolved_[std::string(key)] = *fallback;
    return *fallback;
  }
  const auto& v = value_->at(std::string(key));
  if (!v.is_boolean()) {
    fail_value(key, "wrong type", v, "true or false");
  }
  return v.get<bool>();
}

std::string JsonReader::choice(std::string_view key,
                               std::string_view what,
                               const std::vector<std::string>& values,
                               std::optional<std::string> fallback) {
  if (!has(key) && !fallback) {
    used_.emplace(key);
    fail(key, fmt::format("missing required key; expected one of: {}", join(values)));
  }
  std::string v = string(key, std::move(fallback));  // not const: returned by move
  for (const auto& allowed : values) {
    if (v == allowed) {
      return v;
    }
  }
  fail(key,
       fmt::format("unknown {} '{}'{}valid values are: {}",
                   what,
                   printable(v),
                   did_you_mean(v, values),
                   join(values)));
}

JsonReader JsonReader::object(std::string_view key) {
  used_.emplace(key);
  if (!has(key)) {
    fail(key, "missing required key; expected an object");
  }
  return {value_->at(std::string(key)), file_, pointer_of(key)};
}

void JsonReader::finish() const { finish(std::vector<std::string>(used_.begin(), used_.end())); }

void JsonReader::finish(std::vector<std::string> valid) const {
  std::sort(valid.begin(), valid.end());
  for (const auto& item : value_->items()) {
    if (!std::binary_search(valid.begin(), valid.end(), item.key())) {
      fail(item.key(),
           fmt::format("unknown key '{}'{}valid keys are: {}",
                       printable(item.key()),
                       did_you_mean(item.key(), valid),
                       join(valid)));
    }
  }
}

void JsonReader::merge(std::string_view key, const JsonReader& child) {
  resolved_[std::string(key)] = child.resolved();
}

void JsonReader::merge(std::string_view key, const nlohmann::json& resolved) {
  resolved_[std::string(key)] = resolved;
}

}  // namespace stragglersim::experiments

namespace stragglersim::experiments {
namespace {

/// A first pass over JSON text that builds nothing: it bounds the nesting depth (the value
/// tree, its destructor and dump() recurse once per level, so a hostile file of 10⁵ levels
/// would overflow the stack) and names the JSON pointer of a number outside double range.
class BoundedScan final : public nlohmann::json_sax<nlohmann::json> {
 public:
  BoundedScan(std::string file, std::string prefix)
      : file_(std::move(file)), prefix_(std::move(prefix)) {}

  bool null() override { return value(); }
  bool boolean(bool /*unused*/) override { return value(); }
  bool number_integer(number_integer_t /*unused*/) override { return value(); }
  bool number_unsigned(number_unsigned_t /*unused*/) override { return value(); }
  bool number_float(number_float_t /*unused*/, const string_t& /*unused*/) override {
    return value();
  }
  bool string(string_t& /*unused*/) override { return value(); }
  bool binary(binary_t& /*unused*/) override { return value(); }
  bool start_object(std::size_t /*unused*/) override { return open(false); }
  bool key(string_t& key) override {
    frames_.back().key = key;
    return true;
  }
  bool end_object() override { return close(); }
  bool start_array(std::size_t /*unused*/) override { return open(true); }
  bool end_array() override { return close(); }
  bool parse_error(std::size_t /*position*/,
                   const std::string& token,
                   const nlohmann::detail::exception& e) override {
    if (e.id == 406) {  // out_of_range.406: a number literal beyond ±1.8e308
      std::string got = token.size() > 40 ? token.substr(0, 40) + "..." : token;
      error_ = fmt::format(
          "{}:{}: number out of range; got {}; expected a number of magnitude at most 1.8e308",
          file_,
          pointer(),
          got);
    } else {
      error_ = syntax_error(e.what());
    }
    return false;
  }

  [[nodiscard]] const std::string& error() const { return error_; }

 private:
  struct Frame {
    bool array = false;
    std::size_t index = 0;
    std::string key;
  };

  /// "<file>[:<prefix>]:<line>:<column>: invalid JSON: <problem>" from nlohmann's "[json.exception
  /// .parse_error.101] parse error at line 1, column 5: <problem>".
  [[nodiscard]] std::string syntax_error(std::string_view what) const {
    const std::string where = file_ + (prefix_.empty() ? "" : ":" + prefix_);
    const std::string_view marker = "parse error at line ";
    const auto at = what.find(marker);
    const auto colon = what.find(": ", at == std::string_view::npos ? 0 : at);
    if (at == std::string_view::npos || colon == std::string_view::npos) {
      return fmt::format("{}: invalid JSON: {}", where, what);
    }
    // "3, column 5" -> "3:5" (built anew: GCC 12 warns, -Wrestrict, on an in-place replace).
    const std::string_view line_column =
        what.substr(at + marker.size(), colon - at - marker.size());
    const std::string_view separator = ", column ";
    const auto comma = line_column.find(separator);
    const std::string position = comma == std::string_view::npos
                                     ? std::string(line_column)
                                     : fmt::format("{}:{}",
                                                   line_column.substr(0, comma),
                                                   line_column.substr(comma + separator.size()));
    return fmt::format("{}:{}: invalid JSON: {}", where, position, what.substr(colon + 2));
  }

  [[nodiscard]] std::string pointer() const {
    std::string out = prefix_;
    for (const auto& f : frames_) {
      out += '/';
      out += f.array ? std::to_string(f.index) : escape_pointer_token(f.key);
    }
    return out;
  }
  bool value() {
    if (!frames_.empty() && frames_.back().array) {
      ++frames_.back().index;
    }
    return true;
  }
  bool open(bool array) {
    if (frames_.size() >= kMaxJsonDepth) {
      error_ = fmt::format(
          "{}:{}: nesting too deep; got more than {} levels; expected at most {} nested arrays "
          "and objects",
          file_,
          pointer(),
          kMaxJsonDepth,
          kMaxJsonDepth);
      return false;
    }
    frames_.push_back(Frame{array, 0, {}});
    return true;
  }
  bool close() {
    frames_.pop_back();
    return value();
  }

  std::string file_;
  std::string prefix_;
  std::vector<Frame> frames_;
  std::string error_;
};

}  // namespace

nlohmann::json parse_json(std::string_view text,
                          const std::string& file,
                          const std::string& prefix) {
  BoundedScan scan(file, prefix);
  if (!nlohmann::json::sax_parse(text, &scan) || !scan.error().empty()) {
    throw ConfigError(scan.error().empty() ? fmt::format("{}: invalid JSON", file) : scan.error());
  }
  return nlohmann::json::parse(text);
}

}  // namespace stragglersim::experiments
