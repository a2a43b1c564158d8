#include "sim/stopping_rule.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "models/base/invariant.h"

namespace stragglersim::sim {

Validation AllStopping::Options::validate() const {
  if (workers < 1) {
    return Violation{"workers", "out of range", "an integer >= 1"};
  }
  return std::nullopt;
}

Validation FirstRStopping::Options::validate() const {
  if (workers == 0) {
    return r >= 1 ? std::nullopt : Validation(Violation{"r", "out of range", "an integer >= 1"});
  }
  return options_check::integer_in_range("r", r, 1, workers);
}

Validation DeadlineStopping::Options::validate() const {
  if (workers < 1) {
    return Violation{"workers", "out of range", "an integer >= 1"};
  }
  return options_check::positive("after", after);
}

Validation DecodableStopping::Options::validate() const {
  if (!code) {
    return Violation{"code", "missing", "a gradient code"};
  }
  return std::nullopt;
}

Validation FirstROrDecodableStopping::Options::validate() const {
  if (!code) {
    return Violation{"code", "missing", "a gradient code"};
  }
  return options_check::integer_in_range("r", r, 1, code->workers());
}

bool AllStopping::stop_after(std::span<const int> heard) const {
  return static_cast<int>(heard.size()) >= workers_;
}

bool FirstRStopping::stop_after(std::span<const int> heard) const {
  return static_cast<int>(heard.size()) >= r_;
}

bool DeadlineStopping::stop_after(std::span<const int> heard) const {
  return static_cast<int>(heard.size()) >= workers_;
}

Validation AnytimeStopping::Options::validate() const {
  if (workers < 1) {
    return Violation{"workers", "out of range", "an integer >= 1"};
  }
  return options_check::positive("window", window);
}

bool AnytimeStopping::stop_after(std::span<const int> heard) const {
  return static_cast<int>(heard.size()) >= workers_;
}

bool AdaptiveDeadlineStopping::stop_after(std::span<const int> heard) const {
  return static_cast<int>(heard.size()) >= options_.workers;
}

bool AdaptiveRStopping::stop_after(std::span<const int> heard) const {
  return static_cast<int>(heard.size()) >= options_.r_max;
}

namespace {

/// No set smaller than ceil(k / max support) can cover every partition, so no smaller set
/// decodes exactly.
int minimum_decodable(const codes::GradientCode& code) {
  const auto k = static_cast<std::size_t>(code.partitions());
  std::size_t widest = 1;
  if (const auto load = code.uniform_load()) {
    // A compact code: every support has load·k/n partitions.
    widest = std::max<std::size_t>(
        1, static_cast<std::size_t>(std::llround(*load * static_cast<double>(k) / code.workers())));
  } else {
    for (int i = 0; i < code.workers(); ++i) {
      widest = std::max(widest, code.support(i).size());
    }
  }
  return static_cast<int>((k + widest - 1) / widest);
}

}  // namespace

DecodableStopping::DecodableStopping(std::shared_ptr<const codes::GradientCode> code)
    : code_(std::move(code)), minimum_(minimum_decodable(*code_)) {
  if (!code_->compact() && code_->structure().decoder == codes::DecoderFamily::kLinearAlgebra) {
    memo_ = std::make_shared<const codes::DecodeMemo>(code_);
  }
}

bool DecodableStopping::stop_after(std::span<const int> heard) const {
  if (static_cast<int>(heard.size()) < minimum_) {
    return false;
  }
  if (static_cast<int>(heard.size()) >= code_->workers()) {
    return true;
  }
  // decodable() may be a cheap count (cyclic codes: any n − s workers); confirm with the exact
  // decoder, so an ill-conditioned set makes the master wait for one more worker instead of
  // stopping on a decode that will be refused.
  if (memo_ == nullptr) {
    return code_->decodable(heard) && code_->decode_exact(heard).exact;
  }
  // A linear-algebra code's decodable() is that decode itself unless it is a count.
  if (code_->decodes_from_any_count() && !code_->decodable(heard)) {
    return false;
  }
  return (*memo_)(heard).exact;
}

FirstROrDecodableStopping::FirstROrDecodableStopping(
    int r, std::shared_ptr<const codes::GradientCode> code)
    : r_(r), decodable_(std::move(code)) {}

bool FirstROrDecodableStopping::stop_after(std::span<const int> heard) const {
  return static_cast<int>(heard.size()) >= r_ || decodable_.stop_after(heard);
}

int FirstROrDecodableStopping::minimum_arrivals() const {
  return std::min(r_, decodable_.minimum_arrivals());
}

}  // namespace stragglersim::sim

namespace stragglersim::sim {

std::string update_mode_name(UpdateMode mode) {
  switch (mode) {
    case UpdateMode::kKBatchSync:
      return "k_batch_sync";
    case UpdateMode::kKAsync:
      return "k_async";
    case UpdateMode::kKBatchAsync:
      return "k_batch_async";
    case UpdateMode::kRennala:
      return "rennala";
    case UpdateMode::kMalenia:
      return "malenia";
    case UpdateMode::kRingmaster:
      return "ringmaster";
    case UpdateMode::kMindFlayer:
      return "mindflayer";
    case UpdateMode::kRescaledAsync:
      return "rescaled_async";
  }
  return "k_async";
}

Validation UpdateRule::Options::validate() const {
  if (workers < 1) {
    return Violation{"workers", "out of range", "an integer >= 1"};
  }
  switch (mode) {
    case UpdateMode::kKBatchSync:
    case UpdateMode::kKAsync:
    case UpdateMode::kKBatchAsync:
      return options_check::integer_in_range("k", k, 1, workers);
    case UpdateMode::kRennala:
    case UpdateMode::kMalenia:
    case UpdateMode::kMindFlayer:
      if (k < 1) {
        return Violation{"batch", "out of range", "an integer >= 1"};
      }
      break;
    case UpdateMode::kRingmaster:
    case UpdateMode::kRescaledAsync:
      if (k != 1) {
        return Violation{"k", "out of range", "1 (an update per gradient)"};
      }
      break;
  }
  if (max_delay && *max_delay < 1) {
    return Violation{"max_delay", "out of range", "an integer >= 1"};
  }
  if (mode == UpdateMode::kMindFlayer) {
    const std::string expected = fmt::format("{} cut-offs > 0 (seconds, one per worker)", workers);
    if (cutoffs.size() != static_cast<std::size_t>(workers)) {
      return Violation{"cutoffs", "wrong length", expected, Violation::Got::kSize};
    }
    for (std::size_t i = 0; i < cutoffs.size(); ++i) {
      if (!(cutoffs[i] > 0.0)) {
        return Violation{"cutoffs", "out of range", expected, Violation::Got::kElement, i};
      }
    }
  }
  return std::nullopt;
}

bool UpdateRule::stop_after(std::span<const int> heard) const {
  return static_cast<int>(heard.size()) >= options_.k;
}

}  // namespace stragglersim::sim
