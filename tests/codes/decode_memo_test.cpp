// codes/decode_memo.h against the decoder it memoises: every heard set of small codes, each in
// several orders, gives the outcome of decode_optimal on the set in ascending order.

#include "codes/decode_memo.h"

#include <algorithm>
#include <catch2/catch.hpp>
#include <memory>
#include <numeric>
#include <random>
#include <vector>

#include "codes/bernoulli_gradient_code.h"
#include "codes/cyclic_repetition_code.h"

namespace stragglersim::codes {
namespace {

/// Every subset of 0..n−1 (as a bit mask), ascending.
std::vector<int> memo_test_subset(int n, unsigned mask) {
  std::vector<int> out;
  for (int w = 0; w < n; ++w) {
    if (((mask >> static_cast<unsigned>(w)) & 1U) != 0) out.push_back(w);
  }
  return out;
}

std::vector<std::shared_ptr<const GradientCode>> memo_test_codes() {
  return {std::make_shared<const CyclicRepetitionCode>(7, 2, 3),
          std::make_shared<const CyclicRepetitionCode>(6, 1, 5),
          std::make_shared<const BernoulliGradientCode>(6, 6, 2.0, 11)};
}

}  // namespace

TEST_CASE("decode memo: every heard set's outcome is decode_optimal's on the sorted set",
          "[codes][decode_memo]") {
  for (const auto& code : memo_test_codes()) {
    const int n = code->workers();
    const DecodeMemo memo(code);
    std::mt19937_64 rng(42);
    std::uint64_t lookups = 0;
    for (unsigned mask = 1; mask < (1U << static_cast<unsigned>(n)); ++mask) {
      const std::vector<int> sorted = memo_test_subset(n, mask);
      const Decoding direct = code->decode_optimal(sorted);
      for (int order = 0; order < 3; ++order) {
        std::vector<int> heard = sorted;
        std::shuffle(heard.begin(), heard.end(), rng);
        if (order == 2) heard.push_back(heard.front());  // a worker heard twice counts once
        const DecodeMemo::Outcome o = memo(heard);
        ++lookups;
        INFO(code->name() << " mask " << mask << " order " << order);
        CHECK(o.exact == direct.exact);
        CHECK(o.partitions_covered == direct.partitions_covered);
      }
    }
    // One decode per distinct set, however many orders asked.
    CHECK(memo.decodes() == (1U << static_cast<unsigned>(n)) - 1);
    CHECK(memo.lookups() == lookups);
  }
}

TEST_CASE("decode memo: past its word limit it decodes every time and keeps nothing",
          "[codes][decode_memo]") {
  const auto code = std::make_shared<const CyclicRepetitionCode>(6, 1, 5);
  const DecodeMemo memo(code, 0);
  const std::vector<int> heard = {0, 1, 2, 3, 4};
  for (int k = 0; k < 3; ++k) {
    CHECK(memo(heard).exact == code->decode_exact(heard).exact);
  }
  CHECK(memo.decodes() == 3);
}

}  // namespace stragglersim::codes
