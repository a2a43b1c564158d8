#pragma once
// The link between the workers and the master (docs/model.md §3 "Communication"). A worker's
// message leaves when its compute ends (c_i, seconds after the broadcast) and reaches the master
//   parallel links:  A_i = c_i + L + S/B
//   serial link:     the master receives one message at a time, in order of compute end
//                    (ties by worker index): for that order k = 1, 2, …
//                      A_(k) = max(c_(k) + L, A_(k−1)) + S/B,   A_(0) = −∞
// with latency L (s), message size S (bytes) and bandwidth B (bytes/s). A message spends L in
// flight, then waits for the link to be free, then takes S/B on it (a single-server FIFO queue
// whose customers are the messages). The link is idle at every broadcast: messages of an
// iteration never queue behind the previous iteration's.

#include <cstddef>
#include <limits>
#include <span>
#include <vector>

#include "models/base/options_check.h"

namespace stragglersim::sim {

struct NetworkOptions {
  double latency = 0.0;                                        ///< L ≥ 0, seconds
  double bandwidth = std::numeric_limits<double>::infinity();  ///< B > 0, bytes per second
  double message_bytes = 0.0;                                  ///< S ≥ 0, bytes per message
  bool serial = false;  ///< whether the master's link receives one message at a time
  /// The first violated constraint: latency ≥ 0, bandwidth > 0, message_bytes ≥ 0.
  [[nodiscard]] Validation validate() const;
  /// S/B, the seconds one message occupies the link (0 for an infinite bandwidth).
  [[nodiscard]] double transfer_time() const;
  /// Whether the link adds nothing (L = 0 and S/B = 0): arrivals equal compute ends.
  [[nodiscard]] bool is_free() const;
};

/// Turns compute ends into arrivals at the master. Illegal: options failing validate(), spans of
/// different sizes.
class Network {
 public:
  explicit Network(const NetworkOptions& options = {});
  /// arrival[i] from compute_end[i] (both seconds after the broadcast); the spans may alias.
  void deliver(std::span<const double> compute_end, std::span<double> arrival);
  [[nodiscard]] const NetworkOptions& options() const { return options_; }

 private:
  NetworkOptions options_;
  double transfer_ = 0.0;
  std::vector<std::size_t> order_;
  std::vector<double> ends_;
};

}  // namespace stragglersim::sim
