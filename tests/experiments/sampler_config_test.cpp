// The "sampler" key end to end: auto picks order statistics where exact and records it, an explicit
// order_statistics where it is not exact is refused (exit 2, /sampler, the reason, nothing
// written), and a delay-only uncoded run at n = 10^9 matches the closed form.

#include <fmt/format.h>

#include <catch2/catch.hpp>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>

#include "tests/test_support.h"

namespace {

namespace fs = std::filesystem;
using stragglersim::testing::run_stragglersim;
using stragglersim::testing::slurp;
using stragglersim::testing::TempDir;

nlohmann::json delay_only(int workers, int iterations) {
  return {{"workers", workers},
          {"data", nullptr},
          {"code", {{"kind", "uncoded"}}},
          {"stopping", {{"rule", "all"}}},
          {"delay", {{"kind", "shifted_exponential"}}},
          {"optimizer", {{"iterations", iterations}}}};
}

fs::path write(const fs::path& dir, const std::string& name, const nlohmann::json& j) {
  const fs::path p = dir / name;
  std::ofstream(p) << j.dump();
  return p;
}

TEST_CASE("sampler: auto, explicit choices and refusals", "[experiments][order_statistics]") {
  const TempDir dir("sampler");
  const auto run = [&](const nlohmann::json& c, const std::string& name) {
    const fs::path cfg = write(dir.path(), name + ".json", c);
    return std::make_pair(
        cfg,
        run_stragglersim(
            fmt::format("run '{}' --out '{}'", cfg.string(), (dir.path() / name).string()),
            dir.path()));
  };
  auto c = delay_only(30, 20);
  auto [cfg, r] = run(c, "auto");
  REQUIRE(r.status == 0);
  auto summary = nlohmann::json::parse(slurp(dir.path() / "auto" / "summary.json"));
  CHECK(summary["sampler"] == "order_statistics");
  CHECK(summary["config"]["sampler"] == "auto");

  c["sampler"] = "workers";
  std::tie(cfg, r) = run(c, "workers");
  REQUIRE(r.status == 0);
  summary = nlohmann::json::parse(slurp(dir.path() / "workers" / "summary.json"));
  CHECK(summary["sampler"] == "workers");

  // finish: auto keeps the worker path, order_statistics is refused with the reason.
  c["stragglers"] = "finish";
  c["sampler"] = "auto";
  std::tie(cfg, r) = run(c, "finish_auto");
  REQUIRE(r.status == 0);
  summary = nlohmann::json::parse(slurp(dir.path() / "finish_auto" / "summary.json"));
  CHECK(summary["sampler"] == "workers");
  c["sampler"] = "order_statistics";
  std::tie(cfg, r) = run(c, "finish_os");
  CHECK(r.status == 2);
  CHECK(r.err == "error: " + cfg.string() +
                     ":/sampler: stragglers 'finish' carries each straggler's remaining work into "
                     "the next iteration, so workers are not i.i.d.; got \"order_statistics\"; "
                     "expected \"workers\" or \"auto\" (order statistics need i.i.d. workers)\n");
  CHECK_FALSE(fs::exists(dir.path() / "finish_os"));

  c = delay_only(30, 20);
  c["delay"] = {{"kind", "pareto"}};
  c["sampler"] = "order_statistics";
  std::tie(cfg, r) = run(c, "pareto_os");
  CHECK(r.status == 2);
  CHECK(r.err.find(":/sampler: delay model 'pareto' is not i.i.d. shifted exponential") !=
        std::string::npos);

  c = delay_only(30, 20);
  c["sampler"] = "fastest";
  std::tie(cfg, r) = run(c, "bad");
  CHECK(r.status == 2);
  CHECK(r.err.find("/sampler") != std::string::npos);
}

TEST_CASE("sampler: n = 10^9 delay-only uncoded run matches the closed form",
          "[experiments][order_statistics]") {
  const TempDir dir("sampler_billion");
  const fs::path cfg = write(dir.path(), "b.json", delay_only(1'000'000'000, 10'000));
  const auto r = run_stragglersim(
      fmt::format(
          "run '{}' --out '{}' --max-memory 64M", cfg.string(), (dir.path() / "o").string()),
      dir.path());
  REQUIRE(r.status == 0);
  const auto s = nlohmann::json::parse(slurp(dir.path() / "o" / "summary.json"));
  CHECK(s["sampler"] == "order_statistics");
  // 1 + H_n, H_n = ln n + γ + 1/(2n) to 1e-19.
  const double expected = 1.0 + std::log(1e9) + 0.5772156649015329 + 0.5e-9;
  CHECK(s["theory"]["expected_iteration_time"].get<double>() == Approx(expected).epsilon(1e-12));
  CHECK(std::abs(s["mean_iteration_time"].get<double>() - expected) <
        4.0 * s["iteration_time_standard_error"].get<double>());
  // The worker sampler at this n is refused by the memory budget, naming /workers.
  auto c = delay_only(1'000'000'000, 10);
  c["sampler"] = "workers";
  const fs::path w = write(dir.path(), "w.json", c);
  const auto rw = run_stragglersim(
      fmt::format("run '{}' --out '{}' --max-memory 8G", w.string(), (dir.path() / "w").string()),
      dir.path());
  CHECK(rw.status == 2);
  CHECK(rw.err == "error: " + w.string() +
                      ":/workers: the worker sampler would need about 22.4 GB of memory; got "
                      "1000000000; expected at most 8 GB (--max-memory)\n");
}

}  // namespace
