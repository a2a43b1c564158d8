// The progress line of a long run: silent for 2 s, then redrawn at most every 0.5 s, erased at
// the end; driven by a hand-set clock.
#include "experiments/progress_line.h"

#include <catch2/catch.hpp>
#include <chrono>
#include <sstream>

namespace {

using stragglersim::experiments::ProgressLine;
using stragglersim::experiments::RunProgress;
using Clock = std::chrono::steady_clock;

}  // namespace

TEST_CASE("progress line: quiet for 2 s, then throttled redraws with an ETA",
          "[experiments][progress]") {
  Clock::time_point now{};
  std::ostringstream out;
  {
    ProgressLine line(out, [&now] { return now; });
    now += std::chrono::milliseconds(1999);
    line.update({10, 100, 35.5, 0.25});
    CHECK(out.str().empty());  // a run shorter than 2 s prints nothing
    now += std::chrono::milliseconds(1);
    line.update({20, 100, 71.0, 0.125});
    // 2 s for 20 of 100 iterations: 80 more take 8 s.
    CHECK(out.str() == "\riteration 20/100  simulated 71 s  loss 0.125  ETA 8 s\x1b[K");
    now += std::chrono::milliseconds(499);
    line.update({21, 100, 75.0, 0.12});
    CHECK(out.str().size() ==
          std::string("\riteration 20/100  simulated 71 s  loss 0.125  ETA 8 s\x1b[K").size());
    now += std::chrono::milliseconds(501);
    line.update({30, 100, 100.25, std::nullopt});  // a delay-only run has no loss
    // 3 s for 30 iterations: 70 more take 7 s.
    CHECK(out.str().ends_with("\riteration 30/100  simulated 100.25 s  ETA 7 s\x1b[K"));
  }
  // Erased when the run ends (here: the destructor).
  CHECK(out.str().ends_with("\x1b[K\r\x1b[K"));
}

TEST_CASE("progress line: nothing to erase when nothing was drawn", "[experiments][progress]") {
  Clock::time_point now{};
  std::ostringstream out;
  ProgressLine line(out, [&now] { return now; });
  line.update({1, 2, 1.0, 1.0});
  line.finish();
  CHECK(out.str().empty());
}

TEST_CASE("progress line: a caller's own text, built only when drawn, under the same throttle",
          "[experiments][progress]") {
  Clock::time_point now{};
  std::ostringstream out;
  int built = 0;
  const auto text = [&built](double elapsed) {
    ++built;
    return "grid point after " + std::to_string(static_cast<int>(elapsed)) + " s";
  };
  ProgressLine line(out, [&now] { return now; });
  line.update_text(text);
  CHECK(built == 0);  // quiet for the first 2 s
  now += std::chrono::milliseconds(2000);
  line.update_text(text);
  CHECK(out.str() == "\rgrid point after 2 s\x1b[K");
  now += std::chrono::milliseconds(100);
  line.update_text(text);
  CHECK(built == 1);  // throttled: not even built
  line.finish();
  CHECK(out.str().ends_with("\r\x1b[K"));
}
