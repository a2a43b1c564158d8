#pragma once
// The progress line of a long `run` on a terminal (docs/model.md §9 "Command line"): nothing for
// the first 2 s, then at most one redraw every 0.5 s on stderr,
//   iteration 120/1000  simulated 431.2 s  loss 0.164523  ETA 12 s
// (the loss only for runs with data; ETA from the mean wall-clock seconds per iteration so far),
// erased when the run ends. The caller decides whether stderr is a terminal.

#include <chrono>
#include <cstdint>
#include <functional>
#include <optional>
#include <ostream>
#include <string>

namespace stragglersim::experiments {

/// What a run reports after each trace row.
struct RunProgress {
  std::uint64_t iteration = 0;
  std::uint64_t iterations = 0;  ///< the run's configured length
  double time = 0.0;             ///< simulated seconds so far
  std::optional<double> loss;    ///< f(x_t) (runs with data)
};

/// Called after each trace row (row 0 included).
using ProgressHook = std::function<void(const RunProgress&)>;

/// The text of one progress line (without carriage return).
std::string progress_text(const RunProgress& p, double elapsed_seconds);

class ProgressLine {
 public:
  using Clock = std::function<std::chrono::steady_clock::time_point()>;
  /// Draws on `out`; `clock` is steady_clock::now unless a test supplies its own.
  explicit ProgressLine(std::ostream& out, Clock clock = std::chrono::steady_clock::now);
  ~ProgressLine();
  ProgressLine(const ProgressLine&) = delete;
  ProgressLine& operator=(const ProgressLine&) = delete;
  ProgressLine(ProgressLine&&) = delete;
  ProgressLine& operator=(ProgressLine&&) = delete;

  /// Redraws the line when 2 s have passed since construction and 0.5 s since the last draw.
  void update(const RunProgress& p);
  /// The same for a line of the caller's own text (`advise`'s tuning: "grid point 12/240 ...");
  /// `text` is called only when the line is redrawn, with the seconds since construction.
  void update_text(const std::function<std::string(double elapsed_seconds)>& text);
  /// Erases the line if one was drawn (also done by the destructor).
  void finish();

 private:
  std::ostream& out_;
  Clock clock_;
  std::chrono::steady_clock::time_point start_;
  std::optional<std::chrono::steady_clock::time_point> last_;
};

}  // namespace stragglersim::experiments
