// Numerical stability of the exact real-valued codes (CRC, cyclic MDS) as n grows. The tagged
// hidden case prints the table recorded in experiments/benchmarks/code_stability.md:
//   build/codes_tests "[.stability]"
#include <catch2/catch.hpp>
#include <iostream>

#include "codes/cyclic_mds_code.h"
#include "codes/cyclic_repetition_code.h"
#include "experiments/code_report.h"

using stragglersim::codes::CyclicMdsCode;
using stragglersim::codes::CyclicRepetitionCode;
using stragglersim::experiments::measure_stability;
using stragglersim::experiments::StabilityRow;

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

TEST_CASE("codes: stability table of CRC and cyclic MDS for n = 8 ... 256", "[.stability]") {
  std::vector<StabilityRow> rows;
  for (const int n : {8, 16, 24, 32, 48, 64, 96, 128, 192, 256}) {
    const int s = n / 4;
    const CyclicRepetitionCode crc(n, s, 1);
    rows.push_back(measure_stability(crc, s, 20, 2));
    const CyclicMdsCode mds(n, s);
    rows.push_back(measure_stability(mds, mds.stragglers_tolerated(), 20, 2));
  }
  // Around the threshold of cyclic MDS with s = n/4.
  for (const int n : {52, 56, 60}) {
    const CyclicMdsCode mds(n, n / 4);
    rows.push_back(measure_stability(mds, mds.stragglers_tolerated(), 20, 2));
  }
  for (const int n : {16, 32, 64, 128, 256}) {
    const int s = 2;
    const CyclicRepetitionCode crc(n, s, 1);
    rows.push_back(measure_stability(crc, s, 20, 2));
    const CyclicMdsCode mds(n, s);
    rows.push_back(measure_stability(mds, mds.stragglers_tolerated(), 20, 2));
  }
  std::cout << stragglersim::experiments::format_stability_table(rows);
  for (const StabilityRow& r : rows) {
    if (!r.first_problem.empty()) {
      std::cout << r.code << " n = " << r.workers << ": " << r.first_problem << "\n";
    }
  }
}
