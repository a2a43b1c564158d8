// Numerical stability of the exact real-valued codes (CRC, cyclic MDS) as n grows. The table
// recorded in benchmarks/code_stability.md is printed by the hidden case
// "[.stability]" in tests/experiments/code_report_test.cpp.
#include <algorithm>
#include <catch2/catch.hpp>
#include <iostream>
#include <vector>

#include "codes/code_analysis.h"
#include "codes/cyclic_mds_code.h"
#include "codes/cyclic_repetition_code.h"

using stragglersim::codes::CyclicMdsCode;
using stragglersim::codes::CyclicRepetitionCode;
using stragglersim::codes::Decoding;
using stragglersim::codes::GradientCode;
using stragglersim::codes::measure_stability;
using stragglersim::codes::StabilityRow;

TEST_CASE("codes: CRC and cyclic MDS decode stably at small n", "[codes][stability]") {
  for (const int n : {8, 12, 16}) {
    const int s = n / 4;
    const CyclicRepetitionCode crc(n, s, 1);
    const CyclicMdsCode mds(n, s);
    for (const StabilityRow& row : {measure_stability(crc, s, 30, 2),
                                    measure_stability(mds, mds.stragglers_tolerated(), 30, 2)}) {
      INFO(row.code << " n = " << n << ": " << row.first_problem);
      // Every requested pattern was decoded (the counters are not the defaults).
      CHECK(row.patterns == 30);
      CHECK(row.refused == 0);
      CHECK(row.max_residual <= 1e-9);
      CHECK(row.max_condition < 1e6);
      CHECK(row.burst_exact);
      CHECK(row.burst_residual <= 1e-9);
      CHECK(row.burst_condition >= 1.0);
    }
  }
}

TEST_CASE("codes: exact decodes of CRC and cyclic MDS reproduce the all-ones vector",
          "[codes][stability]") {
  // Independent of the decoder's own residual: a_i from decode_exact, B from assignment(), and
  // Bᵀa recomputed here must be 1 on every partition, for the burst and for a spread pattern.
  const int n = 12;
  const int s = 3;
  const CyclicRepetitionCode crc(n, s, 1);
  const CyclicMdsCode mds(n, s);
  for (const GradientCode* code :
       {static_cast<const GradientCode*>(&crc), static_cast<const GradientCode*>(&mds)}) {
    for (const std::vector<int>& heard : {std::vector<int>{3, 4, 5, 6, 7, 8, 9, 10, 11},
                                          std::vector<int>{0, 2, 3, 5, 6, 8, 9, 10, 11}}) {
      INFO(code->name());
      const Decoding d = code->decode_exact(heard);
      REQUIRE(d.exact);
      const Eigen::VectorXd alpha = code->assignment().transpose() * d.weights;
      CHECK((alpha - Eigen::VectorXd::Ones(n)).norm() <= 1e-8);
      for (int i = 0; i < n; ++i) {
        if (std::find(heard.begin(), heard.end(), i) == heard.end()) {
          CHECK(d.weights(i) == 0.0);  // a straggler's message is never used
        }
      }
    }
  }
  // One worker fewer than n − s: no exact decode exists for a generic code.
  const std::vector<int> too_few = {4, 5, 6, 7, 8, 9, 10, 11};
  CHECK_FALSE(crc.decode_exact(too_few).exact);
  CHECK_FALSE(mds.decode_exact(too_few).exact);
}
