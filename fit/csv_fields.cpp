#include "fit/csv_fields.h"

#include <charconv>
#include <system_error>

#include "models/base/parse_number.h"

namespace stragglersim::sim {

namespace {

bool is_space(char c) { return c == ' ' || c == '\t' || c == '\r' || c == '\v' || c == '\f'; }

}  // namespace

std::string_view trim_field(std::string_view s) {
  while (!s.empty() && is_space(s.front())) s.remove_prefix(1);
  while (!s.empty() && is_space(s.back())) s.remove_suffix(1);
  return s;
}

std::vector<std::string> split_csv_fields(std::string_view line) {
  std::vector<std::string> fields;
  std::string field;
  bool quoted = false;
  for (std::size_t k = 0; k < line.size(); ++k) {
    const char c = line[k];
    if (quoted) {
      if (c == '"' && k + 1 < line.size() && line[k + 1] == '"') {
        field += '"';
        ++k;
      } else if (c == '"') {
        quoted = false;
      } else {
        field += c;
      }
    } else if (c == '"') {
      quoted = true;
    } else if (c == ',') {
      fields.emplace_back(trim_field(field));
      field.clear();
    } else {
      field += c;
    }
  }
  fields.emplace_back(trim_field(field));
  return fields;
}

std::optional<std::int64_t> parse_csv_index(std::string_view token) {
  std::int64_t value = 0;
  if (!models::parse_whole_integer(token, value) || value < 0) {
    return std::nullopt;
  }
  return value;
}

std::optional<double> parse_csv_number(std::string_view token) {
  if (!token.empty() && token.front() == '+') {
    token.remove_prefix(1);
    if (!token.empty() && (token.front() == '-' || token.front() == '+')) return std::nullopt;
  }
  if (token.empty()) return std::nullopt;
  double value = 0.0;
  const char* end = token.data() + token.size();
  const auto [ptr, ec] = std::from_chars(token.data(), end, value);
  if (ec != std::errc() || ptr != end) return std::nullopt;
  return value;
}

}  // namespace stragglersim::sim
