#pragma once
// The memory a run may take. Each large allocation of a run (the data set, the partition
// gradients, a code's matrix and its decoder) is estimated from the config before it is made,
// and a run whose estimate exceeds the limit is refused with a ConfigError naming the key that
// drives it: a user's typo never gets as far as std::bad_alloc or the OOM killer. The limit is
// process-wide: half the physical memory unless `--max-memory` sets it.

#include <cstdint>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>

#include "experiments/config/json_reader.h"

namespace stragglersim::experiments {

/// Half the physical memory (sysconf), or 4 GiB when it cannot be read.
std::uint64_t default_memory_limit();
/// The current limit in bytes.
std::uint64_t memory_limit();
void set_memory_limit(std::uint64_t bytes);

/// "512M", "2G", "1.5T", "1000000" (bytes; K/M/G/T are powers of 1024). ConfigError
/// "--max-memory: ..." for anything else, zero included.
std::uint64_t parse_memory_size(std::string_view text);

/// "1.5 GB" style (powers of 1024, three significant digits).
std::string format_bytes(double bytes);

/// While one is alive on a thread, the estimates granted by require_memory on that thread are
/// summed: each new allocation is checked together with everything the run already holds (the
/// data set, then the code and decoder, then the partition gradients). plan_run opens one per
/// run; scopes do not nest (an inner scope starts a fresh ledger and restores the outer one).
class MemoryLedgerScope {
 public:
  MemoryLedgerScope();
  ~MemoryLedgerScope();
  MemoryLedgerScope(const MemoryLedgerScope&) = delete;
  MemoryLedgerScope& operator=(const MemoryLedgerScope&) = delete;
  MemoryLedgerScope(MemoryLedgerScope&&) = delete;
  MemoryLedgerScope& operator=(MemoryLedgerScope&&) = delete;

 private:
  struct Saved;
  std::unique_ptr<Saved> saved_;
};

/// Records in this thread's ledger an allocation already made (a data file, whose size is known
/// only once read), so that later estimates are checked with it; no effect without a scope.
void note_memory(std::string_view what, double bytes);

/// Bytes granted so far in this thread's ledger (0 without a scope).
double memory_planned();

/// Throws ConfigError "<file>:<pointer>/<key>: <what> would need about <estimate> of memory;
/// got <got>; expected at most <limit> (--max-memory)" when `bytes` exceeds memory_limit(); inside
/// a MemoryLedgerScope, when `bytes` plus the estimates already granted exceed it (the message
/// then lists them: "..., <total> with what the run already holds (<what> <estimate>, ...)").
void require_memory(const JsonReader& reader,
                    std::string_view key,
                    std::string_view what,
                    double bytes,
                    const nlohmann::json& got);

}  // namespace stragglersim::experiments
