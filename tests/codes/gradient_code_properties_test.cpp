// Shared property checks that every gradient code must pass (docs/conventions.md, tests): the same
// helper runs over a list of codes, each built by a factory from a seed.
#include <catch2/catch.hpp>
#include <cmath>
#include <functional>
#include <memory>
#include <vector>

#include "codes/bernoulli_gradient_code.h"
#include "codes/code_analysis.h"
#include "codes/cyclic_mds_code.h"
#include "codes/cyclic_repetition_code.h"
#include "codes/expander_graph_code.h"
#include "codes/fractional_repetition_code.h"
#include "codes/stochastic_gradient_code.h"
#include "codes/uncoded_code.h"

namespace {

using stragglersim::codes::Decoding;
using stragglersim::codes::GradientCode;

struct CodeUnderTest {
  std::string label;
  std::function<std::unique_ptr<GradientCode>(std::uint64_t seed)> make;
  bool exact = false;   ///< decodes exactly from every pattern of ≤ stragglers_tolerated()
  bool seeded = false;  ///< B depends on the seed
  /// Expected normalised load of worker i (NaN: only checked against the support).
  std::function<double(const GradientCode&, int)> load;
};

std::vector<CodeUnderTest> all_codes() {
  using namespace stragglersim::codes;
  const auto nan = [](const GradientCode&, int) { return std::nan(""); };
  return {
      {"uncoded(9)",
       [](std::uint64_t) { return std::make_unique<UncodedCode>(9); },
       true,
       false,
       [](const GradientCode&, int) { return 1.0; }},
      {"frc(12, 3)",
       [](std::uint64_t) { return std::make_unique<FractionalRepetitionCode>(12, 3); },
       true,
       false,
       [](const GradientCode&, int) { return 3.0; }},
      {"crc(10, 3)",
       [](std::uint64_t seed) { return std::make_unique<CyclicRepetitionCode>(10, 3, seed); },
       true,
       true,
       [](const GradientCode&, int) { return 4.0; }},
      {"cyclic_mds(11, 4)",
       [](std::uint64_t) { return std::make_unique<CyclicMdsCode>(11, 4); },
       true,
       false,
       [](const GradientCode&, int) { return 5.0; }},
      {"cyclic_mds(10, 4) -> sigma 5",
       [](std::uint64_t) { return std::make_unique<CyclicMdsCode>(10, 4); },
       true,
       false,
       [](const GradientCode&, int) { return 6.0; }},
      {"bgc(12, 12, 3)",
       [](std::uint64_t seed) {
         return std::make_unique<BernoulliGradientCode>(12, 12, 3.0, seed);
       },
       false,
       true,
       nan},
      {"expander(15, 3)",
       [](std::uint64_t seed) { return std::make_unique<ExpanderGraphCode>(15, 3, seed); },
       false,
       true,
       [](const GradientCode&, int) { return 3.0; }},
      {"sgc(10, 15, 2)",
       [](std::uint64_t seed) { return std::make_unique<StochasticGradientCode>(10, 15, 2, seed); },
       false,
       true,
       // 15·2 = 30 slots over 10 workers: exactly 3 partitions each, normalised 3·10/15.
       [](const GradientCode&, int) { return 2.0; }},
  };
}

void check_decoding(const GradientCode& code, std::span<const int> heard, const Decoding& d) {
  REQUIRE(d.weights.size() == code.workers());
  REQUIRE(d.alpha.size() == code.partitions());
  // α = B_Kᵀ a with a zero outside K.
  Eigen::VectorXd a_k = Eigen::VectorXd::Zero(code.workers());
  for (const int i : heard) {
    a_k(i) = d.weights(i);
  }
  CHECK((d.weights - a_k).cwiseAbs().maxCoeff() == 0.0);
  const Eigen::VectorXd alpha = code.assignment().transpose() * a_k;
  CHECK((alpha - d.alpha).cwiseAbs().maxCoeff() <= 1e-12 * (1.0 + alpha.cwiseAbs().maxCoeff()));
  CHECK(d.error == Approx((d.alpha.array() - 1.0).square().sum()).margin(1e-12));
  CHECK(d.condition >= 1.0 - 1e-12);
  if (!d.exact) {
    // Only decode_exact must explain itself; the check is made by the caller.
    CHECK((d.error > stragglersim::codes::kExactTolerance ||
           d.condition > stragglersim::codes::kConditionLimit));
  }
}

}  // namespace

TEST_CASE("codes: every code satisfies the shared decoding properties", "[codes][properties]") {
  for (const CodeUnderTest& c : all_codes()) {
    INFO("code " << c.label);
    const auto code = c.make(11);
    const int n = code->workers();

    // All workers heard.
    std::vector<int> everyone(static_cast<std::size_t>(n));
    for (int i = 0; i < n; ++i) {
      everyone[static_cast<std::size_t>(i)] = i;
    }
    const Decoding all = code->decode_exact(everyone);
    check_decoding(*code, everyone, all);
    if (c.exact) {
      CHECK(all.exact);
      CHECK(all.error <= 1e-9);
      CHECK(all.problem.empty());
      CHECK(code->decodable(everyone));
    }

    // Loads as constructed.
    for (int i = 0; i < n; ++i) {
      const double expected = c.load(*code, i);
      const double from_support =
          static_cast<double>(code->support(i).size()) * n / code->partitions();
      CHECK(code->load(i) == Approx(from_support));
      if (!std::isnan(expected)) {
        CHECK(code->load(i) == Approx(expected));
      }
    }

    // Random patterns of 1 … n − 1 stragglers: every decoder satisfies α = B_Kᵀ a; optimal is
    // never worse than one-step; exact refusals explain themselves; decodable agrees.
    for (int s = 1; s < n; s += 2) {
      stragglersim::codes::for_each_straggler_pattern(
          n, s, 0, 10, 100 + static_cast<std::uint64_t>(s), [&](std::span<const int> heard) {
            const Decoding opt = code->decode_optimal(heard);
            const Decoding one = code->decode_one_step(heard);
            const Decoding ex = code->decode_exact(heard);
            check_decoding(*code, heard, opt);
            check_decoding(*code, heard, one);
            check_decoding(*code, heard, ex);
            // The outcome alone (DecodeMemo's): decode_optimal's weights and exactness.
            const Decoding outcome = code->decode_outcome(heard);
            CHECK(outcome.exact == opt.exact);
            CHECK(outcome.weights == opt.weights);
            CHECK(outcome.partitions_covered == opt.partitions_covered);
            CHECK(outcome.condition >= opt.condition * (1.0 - 1e-12));
            CHECK(opt.error <= one.error + 1e-9);
            CHECK(ex.exact == ex.problem.empty());
            if (c.exact) {
              CHECK(code->decodable(heard) == ex.exact);
              if (s <= code->stragglers_tolerated()) {
                CHECK(ex.exact);
              }
            }
          });
    }
  }
}

TEST_CASE("codes: the same seed reproduces B and another seed changes it", "[codes][properties]") {
  for (const CodeUnderTest& c : all_codes()) {
    INFO("code " << c.label);
    const auto a = c.make(5);
    const auto b = c.make(5);
    const auto other = c.make(6);
    CHECK(a->assignment() == b->assignment());
    CHECK((a->assignment() != other->assignment()) == c.seeded);
  }
}

namespace {

/// A diagonal code: worker i holds partition i alone with B_ii = `diagonal[i]`.
class OutcomeTestDiagonalCode final : public GradientCode {
 public:
  explicit OutcomeTestDiagonalCode(const std::vector<double>& diagonal)
      : GradientCode(
            Eigen::VectorXd::Map(diagonal.data(), static_cast<Eigen::Index>(diagonal.size()))
                .asDiagonal()
                .toDenseMatrix()) {}
  [[nodiscard]] std::string name() const override { return "diagonal"; }
  [[nodiscard]] int stragglers_tolerated() const override { return 0; }
};

}  // namespace

TEST_CASE("codes: decode_outcome's condition bound decides exactness as the condition number does",
          "[codes][properties]") {
  // Nine entries 1 and one small entry e: the condition number is 1/e, the bound ‖T‖_F·‖T⁻¹‖_F
  // is 3/e. e = 1.5e-10: condition 6.7e9 within the limit 1e10, bound 2e10 past it, so the value
  // is computed and the decode is exact. e = 1e-12: condition 1e12, not exact. e = 1e-6: the
  // bound 3e6 decides.
  for (const double e : {1.5e-10, 1e-12, 1e-6}) {
    INFO("e = " << e);
    std::vector<double> diagonal(10, 1.0);
    diagonal.back() = e;
    const OutcomeTestDiagonalCode code(diagonal);
    std::vector<int> everyone(10);
    for (int i = 0; i < 10; ++i) {
      everyone[static_cast<std::size_t>(i)] = i;
    }
    const Decoding opt = code.decode_optimal(everyone);
    const Decoding outcome = code.decode_outcome(everyone);
    CHECK(opt.condition == Approx(1.0 / e).epsilon(1e-9));
    CHECK(outcome.exact == (1.0 / e <= stragglersim::codes::kConditionLimit));
    CHECK(outcome.exact == opt.exact);
    CHECK(outcome.weights == opt.weights);
    if (e == 1e-6) {
      CHECK(outcome.condition == Approx(3.0 / e).epsilon(1e-9));  // the bound
    } else {
      CHECK(outcome.condition == opt.condition);  // the value, past the bound's reach
    }
  }
}
