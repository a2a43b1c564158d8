// Tests of experiments/code_report.{h,cpp} (kept with the codes tests by ownership; the file name
// is unique so it can move to tests/experiments/ unchanged).
#include "experiments/code_report.h"

#include <catch2/catch.hpp>

#include "codes/bernoulli_gradient_code.h"
#include "codes/cyclic_repetition_code.h"
#include "codes/fractional_repetition_code.h"
#include "codes/uncoded_code.h"

using namespace stragglersim;

TEST_CASE("codes: binomial coefficients saturate", "[codes][report]") {
  CHECK(experiments::binomial(5, 2) == 10);
  CHECK(experiments::binomial(12, 0) == 1);
  CHECK(experiments::binomial(3, 4) == 0);
  CHECK(experiments::binomial(60, 30) == 118264581564861424LL);
  CHECK(experiments::binomial(256, 64) == std::numeric_limits<std::int64_t>::max());
}

TEST_CASE("codes: straggler patterns are enumerated or sampled", "[codes][report]") {
  std::vector<std::vector<int>> seen;
  const bool all =
      experiments::for_each_straggler_pattern(4, 2, 100, 1, 0, [&](std::span<const int> heard) {
        seen.emplace_back(heard.begin(), heard.end());
      });
  CHECK(all);
  CHECK(seen == std::vector<std::vector<int>>{{2, 3}, {1, 3}, {1, 2}, {0, 3}, {0, 2}, {0, 1}});
  seen.clear();
  const bool sampled =
      experiments::for_each_straggler_pattern(10, 3, 5, 7, 9, [&](std::span<const int> heard) {
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
  CHECK(experiments::assignment_csv(code) == "worker,p0,p1\n0,1,0\n1,0,1\n");
}

TEST_CASE("codes: report of FRC over every single straggler", "[codes][report]") {
  const codes::FractionalRepetitionCode code(6, 2);
  const auto report = experiments::analyse_code(code, {});
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
  const std::string table = experiments::format_table(report);
  CHECK_THAT(
      table,
      Catch::Matchers::StartsWith("code frc: 6 workers, 6 partitions, tolerates 1 stragglers\n"
                                  "load per worker: min 2, mean 2, max 2\n"
                                  "patterns: all 6 of 1 stragglers (5 workers heard)\n"));
  const auto j = experiments::to_json(report);
  CHECK(j["code"] == "frc");
  CHECK(j["patterns"] == 6);
  CHECK(j["decoders"][2]["decoder"] == "exact");
  CHECK(j["assignment_csv"].get<std::string>().starts_with(
      "worker,p0,p1,p2,p3,p4,p5\n0,1,1,0,0,0,0\n"));
}

TEST_CASE("codes: report counts refusals when waiting for too few workers", "[codes][report]") {
  const codes::CyclicRepetitionCode code(8, 2, 1);
  experiments::CodeReportOptions options;
  options.wait_for = 5;  // 3 stragglers > s = 2
  options.include_assignment = false;
  const auto report = experiments::analyse_code(code, options);
  CHECK(report.stragglers == 3);
  CHECK(report.patterns == 56);
  CHECK(report.decoders[2].exact == 0);
  CHECK_THAT(report.decoders[2].first_problem,
             Catch::Matchers::StartsWith("the 5 workers heard cannot decode exactly"));
  CHECK(report.assignment_csv.empty());
  CHECK(experiments::format_table(report).find("exact decoder refused 56 of 56 patterns") !=
        std::string::npos);
}

TEST_CASE("codes: report samples BGC patterns with the seed", "[codes][report]") {
  const codes::BernoulliGradientCode code(30, 30, 3.0, 2);
  experiments::CodeReportOptions options;
  options.stragglers = 10;
  options.samples = 50;
  options.seed = 4;
  const auto a = experiments::analyse_code(code, options);
  const auto b = experiments::analyse_code(code, options);
  CHECK_FALSE(a.exhaustive);
  CHECK(a.patterns == 50);
  CHECK(experiments::to_json(a) == experiments::to_json(b));
  CHECK(a.decoders[0].mean_error <= a.decoders[1].mean_error);
}
