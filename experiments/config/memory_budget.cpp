#include "experiments/config/memory_budget.h"

#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <charconv>
#include <cmath>
#include <string>
#include <utility>
#include <vector>

#include "experiments/config/config_error.h"

namespace stragglersim::experiments {
namespace {

std::atomic<std::uint64_t>& limit_storage() {
  static std::atomic<std::uint64_t> limit{default_memory_limit()};
  return limit;
}

}  // namespace

std::uint64_t default_memory_limit() {
  const long pages = ::sysconf(_SC_PHYS_PAGES);
  const long page_size = ::sysconf(_SC_PAGE_SIZE);
  if (pages <= 0 || page_size <= 0) {
    return std::uint64_t{4} << 30;
  }
  return static_cast<std::uint64_t>(pages) * static_cast<std::uint64_t>(page_size) / 2;
}

std::uint64_t memory_limit() { return limit_storage().load(); }

void set_memory_limit(std::uint64_t bytes) { limit_storage().store(bytes); }

std::uint64_t parse_memory_size(std::string_view text) {
  const auto fail = [&]() -> std::uint64_t {
    throw ConfigError(fmt::format(
        "--max-memory: not a memory size; got \"{}\"; expected a positive number of bytes with "
        "an optional K, M, G or T suffix (powers of 1024), e.g. 2G",
        text));
  };
  double scale = 1.0;
  std::string_view number = text;
  if (!number.empty()) {
    switch (number.back()) {
      case 'K':
      case 'k':
        scale = 0x1p10;
        break;
      case 'M':
      case 'm':
        scale = 0x1p20;
        break;
      case 'G':
      case 'g':
        scale = 0x1p30;
        break;
      case 'T':
      case 't':
        scale = 0x1p40;
        break;
      default:
        break;
    }
    if (scale > 1.0) {
      number.remove_suffix(1);
    }
  }
  double value = 0.0;
  const char* end = number.data() + number.size();
  const auto [ptr, ec] = std::from_chars(number.data(), end, value);
  if (number.empty() || ec != std::errc() || ptr != end || !std::isfinite(value) || value <= 0.0 ||
      value * scale >= 0x1p63) {
    return fail();
  }
  return static_cast<std::uint64_t>(value * scale);
}

std::string format_bytes(double bytes) {
  constexpr std::array<const char*, 7> kUnits = {"bytes", "KB", "MB", "GB", "TB", "PB", "EB"};
  std::size_t unit = 0;
  while (bytes >= 1024.0 && unit + 1 < kUnits.size()) {
    bytes /= 1024.0;
    ++unit;
  }
  return fmt::format("{:.3g} {}", bytes, kUnits[unit]);
}

/// The calling thread's plan (outside the anonymous namespace: MemoryLedgerScope::Saved holds one).
struct MemoryLedger {
  bool active = false;
  double total = 0.0;
  std::vector<std::pair<std::string, double>> items;
};

namespace {

using Ledger = MemoryLedger;

Ledger& this_thread_ledger() {
  thread_local Ledger ledger;
  return ledger;
}

}  // namespace

struct MemoryLedgerScope::Saved {
  Ledger outer;
};

MemoryLedgerScope::MemoryLedgerScope() : saved_(std::make_unique<Saved>()) {
  Ledger& ledger = this_thread_ledger();
  saved_->outer = std::move(ledger);
  ledger = Ledger{};
  ledger.active = true;
}

MemoryLedgerScope::~MemoryLedgerScope() { this_thread_ledger() = std::move(saved_->outer); }

double memory_planned() {
  const Ledger& ledger = this_thread_ledger();
  return ledger.active ? ledger.total : 0.0;
}

void note_memory(std::string_view what, double bytes) {
  Ledger& ledger = this_thread_ledger();
  if (ledger.active) {
    ledger.total += bytes;
    ledger.items.emplace_back(what, bytes);
  }
}

void require_memory(const JsonReader& reader,
                    std::string_view key,
                    std::string_view what,
                    double bytes,
                    const nlohmann::json& got) {
  const auto limit = static_cast<double>(memory_limit());
  Ledger& ledger = this_thread_ledger();
  const double held = ledger.active ? ledger.total : 0.0;
  const double total = held + bytes;
  if (!(total <= limit)) {
    std::string need = fmt::format("{} would need about {} of memory", what, format_bytes(bytes));
    if (held > 0.0) {
      std::string list;
      for (const auto& [name, size] : ledger.items) {
        list += fmt::format("{}{} {}", list.empty() ? "" : ", ", name, format_bytes(size));
      }
      need += fmt::format(", {} with what the run already holds ({})", format_bytes(total), list);
    }
    reader.fail_value(
        key, need, got, fmt::format("at most {} (--max-memory)", format_bytes(limit)));
  }
  if (ledger.active) {
    ledger.total = total;
    ledger.items.emplace_back(what, bytes);
  }
}

}  // namespace stragglersim::experiments
