#pragma once
// A plug-in table that code outside the library can extend (the backend table, the stopping
// rules): the built-in rows first, in the order given, then the rows registered later. Every
// reader gets a copy taken under the lock, so registering never invalidates what a caller
// holds; a plan keeps its own copy of its row.

#include <fmt/format.h>

#include <algorithm>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "models/base/invariant.h"

namespace stragglersim::experiments {

/// `Row` has a `name` and a callable `make`.
template <typename Row>
class RowRegistry {
 public:
  /// `what` names a row in the internal errors ("backend", "stopping rule").
  RowRegistry(std::vector<Row> builtin, std::string what) : what_(std::move(what)) {
    for (auto& row : builtin) {
      add(std::move(row));
    }
    builtin_ = rows_.size();
  }

  /// The one way a row enters the table, built-in or registered. Illegal: an empty name, a name
  /// already in the table, a null factory.
  void add(Row row) {
    const std::lock_guard lock(mutex_);
    STRAGGLERSIM_ASSERT(!row.name.empty() && row.make != nullptr,
                        fmt::format("a {} row needs a name and a factory", what_));
    STRAGGLERSIM_ASSERT(position(row.name) == rows_.end(),
                        fmt::format("{} '{}' is already registered", what_, row.name));
    rows_.push_back(std::move(row));
  }

  /// Removes a registered row. Illegal: a built-in row or a name not in the table.
  void remove(std::string_view name) {
    const std::lock_guard lock(mutex_);
    const auto found = position(name);
    STRAGGLERSIM_ASSERT(
        found != rows_.end() && found - rows_.begin() >= static_cast<std::ptrdiff_t>(builtin_),
        fmt::format("no registered {} '{}' to remove", what_, name));
    rows_.erase(found);
  }

  [[nodiscard]] std::vector<Row> rows() const {
    const std::lock_guard lock(mutex_);
    return rows_;
  }

  [[nodiscard]] std::optional<Row> find(std::string_view name) const {
    const std::lock_guard lock(mutex_);
    const auto found = position(name);
    return found == rows_.end() ? std::nullopt : std::optional<Row>(*found);
  }

 private:
  [[nodiscard]] auto position(std::string_view name) const {
    return std::find_if(
        rows_.begin(), rows_.end(), [&](const Row& row) { return row.name == name; });
  }

  mutable std::mutex mutex_;
  std::vector<Row> rows_;
  std::size_t builtin_ = 0;
  std::string what_;
};

}  // namespace stragglersim::experiments
