// Numerical stability of the exact real-valued codes (CRC, cyclic MDS) as n grows. The table
// recorded in experiments/benchmarks/code_stability.md is printed by the hidden case
// "[.stability]" in tests/experiments/code_report_test.cpp.
#include <catch2/catch.hpp>
#include <iostream>

#include "codes/code_analysis.h"
#include "codes/cyclic_mds_code.h"
#include "codes/cyclic_repetition_code.h"

using stragglersim::codes::CyclicMdsCode;
using stragglersim::codes::CyclicRepetitionCode;
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
      CHECK(row.refused == 0);
      CHECK(row.max_residual <= 1e-9);
      CHECK(row.max_condition < 1e6);
      CHECK(row.burst_exact);
    }
  }
}
