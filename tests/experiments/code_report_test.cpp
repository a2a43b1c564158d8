// Tests of experiments/code_report.{h,cpp}: the `codes` subcommand's table and JSON.
#include "experiments/code_report.h"

#include <catch2/catch.hpp>
#include <iostream>

#include "codes/cyclic_mds_code.h"
#include "codes/cyclic_repetition_code.h"
#include "codes/fractional_repetition_code.h"

using namespace stragglersim;

TEST_CASE("experiments: code report table and JSON of FRC over every single straggler",
          "[experiments][report]") {
  const codes::FractionalRepetitionCode code(6, 2);
  const auto report = codes::analyse_code(code, {});
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

TEST_CASE("experiments: code report table counts refusals", "[experiments][report]") {
  const codes::CyclicRepetitionCode code(8, 2, 1);
  // 3 stragglers > s = 2.
  const auto report = codes::analyse_code(code, {.wait_for = 5, .include_assignment = false});
  CHECK(experiments::format_table(report).find("exact decoder refused 56 of 56 patterns") !=
        std::string::npos);
}

TEST_CASE("codes: stability table of CRC and cyclic MDS for n = 8 ... 256", "[.stability][heavy]") {
  std::vector<codes::StabilityRow> rows;
  for (const int n : {8, 16, 24, 32, 48, 64, 96, 128, 192, 256}) {
    const int s = n / 4;
    const codes::CyclicRepetitionCode crc(n, s, 1);
    rows.push_back(codes::measure_stability(crc, s, 20, 2));
    const codes::CyclicMdsCode mds(n, s);
    rows.push_back(codes::measure_stability(mds, mds.stragglers_tolerated(), 20, 2));
  }
  // Around the threshold of cyclic MDS with s = n/4.
  for (const int n : {52, 56, 60}) {
    const codes::CyclicMdsCode mds(n, n / 4);
    rows.push_back(codes::measure_stability(mds, mds.stragglers_tolerated(), 20, 2));
  }
  for (const int n : {16, 32, 64, 128, 256}) {
    const int s = 2;
    const codes::CyclicRepetitionCode crc(n, s, 1);
    rows.push_back(codes::measure_stability(crc, s, 20, 2));
    const codes::CyclicMdsCode mds(n, s);
    rows.push_back(codes::measure_stability(mds, mds.stragglers_tolerated(), 20, 2));
  }
  std::cout << experiments::format_stability_table(rows);
  for (const codes::StabilityRow& r : rows) {
    if (!r.first_problem.empty()) {
      std::cout << r.code << " n = " << r.workers << ": " << r.first_problem << "\n";
    }
  }
}
