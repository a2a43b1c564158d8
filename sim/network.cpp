#include "sim/network.h"

#include <algorithm>
#include <numeric>

#include "models/base/invariant.h"

namespace stragglersim::sim {

Validation NetworkOptions::validate() const {
  return options_check::first_of({options_check::at_least("latency", latency, 0.0),
                                  options_check::positive("bandwidth", bandwidth),
                                  options_check::at_least("message_bytes", message_bytes, 0.0)});
}

double NetworkOptions::transfer_time() const { return message_bytes / bandwidth; }

bool NetworkOptions::is_free() const { return latency == 0.0 && transfer_time() == 0.0; }

Network::Network(const NetworkOptions& options)
    : options_(options), transfer_(options.transfer_time()) {
  STRAGGLERSIM_ASSERT(!options.validate(),
                      "network needs latency >= 0, bandwidth > 0, message_bytes >= 0");
}

void Network::deliver(std::span<const double> compute_end, std::span<double> arrival) {
  STRAGGLERSIM_ASSERT(compute_end.size() == arrival.size(), "one arrival per compute end");
  const double shift = options_.latency + transfer_;
  if (!options_.serial) {
    for (std::size_t i = 0; i < arrival.size(); ++i) {
      arrival[i] = compute_end[i] + shift;
    }
    return;
  }
  // The spans may alias: sort a copy of the compute ends.
  ends_.assign(compute_end.begin(), compute_end.end());
  order_.resize(ends_.size());
  std::iota(order_.begin(), order_.end(), std::size_t{0});
  std::sort(order_.begin(), order_.end(), [this](std::size_t a, std::size_t b) {
    return ends_[a] < ends_[b] || (ends_[a] == ends_[b] && a < b);
  });
  double link_free = -std::numeric_limits<double>::infinity();
  for (const std::size_t i : order_) {
    link_free = std::max(ends_[i] + options_.latency, link_free) + transfer_;
    arrival[i] = link_free;
  }
}

}  // namespace stragglersim::sim
