#include "experiments/progress_line.h"

#include <fmt/format.h>

#include <cmath>

namespace stragglersim::experiments {
namespace {

constexpr std::chrono::milliseconds kQuiet{2000};
constexpr std::chrono::milliseconds kRedraw{500};

}  // namespace

std::string progress_text(const RunProgress& p, double elapsed_seconds) {
  std::string text =
      fmt::format("iteration {}/{}  simulated {:.6g} s", p.iteration, p.iterations, p.time);
  if (p.loss) {
    text += fmt::format("  loss {:.6g}", *p.loss);
  }
  if (p.iteration > 0 && p.iterations >= p.iteration) {
    const double per_iteration = elapsed_seconds / static_cast<double>(p.iteration);
    const double eta = per_iteration * static_cast<double>(p.iterations - p.iteration);
    text += fmt::format("  ETA {:.0f} s", eta);
  }
  return text;
}

ProgressLine::ProgressLine(std::ostream& out, Clock clock)
    : out_(out), clock_(std::move(clock)), start_(clock_()) {}

ProgressLine::~ProgressLine() { finish(); }

void ProgressLine::update(const RunProgress& p) {
  update_text([&p](double elapsed) { return progress_text(p, elapsed); });
}

void ProgressLine::update_text(const std::function<std::string(double)>& text) {
  const auto now = clock_();
  if (now - start_ < kQuiet || (last_ && now - *last_ < kRedraw)) {
    return;
  }
  last_ = now;
  // \r and "erase to end of line" (ANSI EL): the line is redrawn in place.
  out_ << '\r' << text(std::chrono::duration<double>(now - start_).count()) << "\x1b[K"
       << std::flush;
}

void ProgressLine::finish() {
  if (last_) {
    out_ << "\r\x1b[K" << std::flush;
    last_.reset();
  }
}

}  // namespace stragglersim::experiments
