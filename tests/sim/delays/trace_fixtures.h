#pragma once
// Small hand-made delay traces shared by the trace model's tests and the trace theory's.

#include <cstddef>

#include "fit/delay_trace.h"

namespace stragglersim::sim::testing {

/// A 3-worker iteration-form trace of 4 rows (row t holds distinct values).
inline DelayTrace iteration_trace() {
  DelayTrace t;
  t.path = "t.csv";
  t.workers = 3;
  t.has_iterations = true;
  t.per_iteration = {{0.5, 1.5, 0.25}, {2.0, 0.75, 1.0}, {0.125, 3.0, 0.5}, {1.25, 0.5, 4.0}};
  t.iterations = {1, 2, 3, 4};
  t.per_worker.assign(3, {});
  for (const auto& row : t.per_iteration) {
    for (std::size_t i = 0; i < 3; ++i) {
      t.per_worker[i].push_back(row[i]);
    }
  }
  return t;
}

/// A 3-worker pool trace with pools of different sizes.
inline DelayTrace pool_trace() {
  DelayTrace t;
  t.path = "pool.csv";
  t.workers = 3;
  t.per_worker = {{1.0, 2.0}, {0.5, 1.5, 2.5}, {2.25, 0.75, 1.75, 3.5}};
  return t;
}

}  // namespace stragglersim::sim::testing
