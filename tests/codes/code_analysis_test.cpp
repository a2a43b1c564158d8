// Tests of codes/code_analysis.{h,cpp}: straggler-pattern enumeration and decoder statistics.
#include "codes/code_analysis.h"

#include <catch2/catch.hpp>

#include "codes/bernoulli_gradient_code.h"
#include "codes/cyclic_repetition_code.h"
#include "codes/fractional_repetition_code.h"
#include "codes/uncoded_code.h"

using namespace stragglersim;

TEST_CASE("codes: binomial coefficients saturate", "[codes][report]") {
  CHECK(codes::binomial(5, 2) == 10);
  CHECK(codes::binomial(12, 0) == 1);
  CHECK(codes::binomial(3, 4) == 0);
  CHECK(codes::binomial(60, 30) == 118264581564861424LL);
  CHECK(codes::binomial(256, 64) == std::numeric_limits<std::int64_t>::max());
}

TEST_CASE("codes: straggler patterns are enumerated or sampled", "[codes][report]") {
  std::vector<std::vector<int>> seen;
  const bool all =
      codes::for_each_straggler_pattern(4, 2, 100, 1, 0, [&](std::span<const int> heard) {
        seen.emplace_back(heard.begin(), heard.end());
      });
  CHECK(all);
  CHECK(seen == std::vector<std::vector<int>>{{2, 3}, {1, 3}, {1, 2}, {0, 3}, {0, 2}, {0, 1}});
  seen.clear();
  const bool sampled =
      codes::for_each_straggler_pattern(10, 3, 5, 7, 9, [&](std::span<const int> heard) {
        seen.emplace_back(heard.begin(), heard.end());
      });
  CHECK_FALSE(sampled);
  REQUIRE(seen.size() == 7);
  for (const auto& h : seen) {
    CHECK(h.size() == 7);
    CHECK(std::is_sorted(h.begin(), h.end()));
  }
}

TEST_CASE("codes: assignment CSV lists B row by row", "[codes][report]") {
  const codes::UncodedCode code(2);
  CHECK(codes::assignment_csv(code) == "worker,p0,p1\n0,1,0\n1,0,1\n");
}

TEST_CASE("codes: report of FRC over every single straggler", "[codes][report]") {
  const codes::FractionalRepetitionCode code(6, 2);
  const auto report = codes::analyse_code(code, {});
  CHECK(report.code == "frc");
  CHECK(report.stragglers == 1);
  CHECK(report.heard == 5);
  CHECK(report.exhaustive);
  CHECK(report.patterns == 6);
  CHECK(report.loads == std::vector<double>(6, 2.0));
  REQUIRE(report.decoders.size() == 3);
  for (const auto& d : report.decoders) {
    CHECK(d.patterns == 6);
    CHECK(d.exact == 6);
    CHECK(d.max_error == 0.0);
  }
}

TEST_CASE("codes: report counts refusals when waiting for too few workers", "[codes][report]") {
  const codes::CyclicRepetitionCode code(8, 2, 1);
  codes::CodeReportOptions options;
  options.wait_for = 5;  // 3 stragglers > s = 2
  options.include_assignment = false;
  const auto report = codes::analyse_code(code, options);
  CHECK(report.stragglers == 3);
  CHECK(report.patterns == 56);
  CHECK(report.decoders[2].exact == 0);
  CHECK_THAT(report.decoders[2].first_problem,
             Catch::Matchers::StartsWith("the 5 workers heard cannot decode exactly"));
  CHECK(report.assignment_csv.empty());
}

TEST_CASE("codes: report samples BGC patterns with the seed", "[codes][report]") {
  const codes::BernoulliGradientCode code(30, 30, 3.0, 2);
  codes::CodeReportOptions options;
  options.stragglers = 10;
  options.samples = 50;
  options.seed = 4;
  const auto a = codes::analyse_code(code, options);
  const auto b = codes::analyse_code(code, options);
  CHECK_FALSE(a.exhaustive);
  CHECK(a.patterns == 50);
  for (std::size_t i = 0; i < a.decoders.size(); ++i) {
    CHECK(a.decoders[i].mean_error == b.decoders[i].mean_error);
    CHECK(a.decoders[i].max_condition == b.decoders[i].max_condition);
  }
  CHECK(a.decoders[0].mean_error <= a.decoders[1].mean_error);
}
