#include "experiments/predict/plan_optimum.h"

#include <fmt/format.h>

#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>

#include "tests/test_support.h"

namespace {

namespace fs = std::filesystem;
using stragglersim::testing::run_stragglersim;
using stragglersim::testing::slurp;

/// A logistic run with an exact (Newton) f*.
fs::path write_config(const fs::path& dir, std::uint64_t seed) {
  nlohmann::json c = nlohmann::json::parse(R"({
    "name": "c", "workers": 4,
    "data": {"source": "synthetic", "generator": "gaussian_mixture", "rows": 3000, "features": 20},
    "loss": {"kind": "logistic", "l2": 0.001},
    "code": {"kind": "uncoded"}, "stopping": {"rule": "all"},
    "delay": {"kind": "shifted_exponential"},
    "optimizer": {"kind": "gd", "step": "auto", "iterations": 3}
  })");
  c["seed"] = seed;
  const fs::path path = dir / fmt::format("c{}.json", seed);
  std::ofstream(path) << c.dump(2);
  return path;
}

nlohmann::json run_with_cache(const fs::path& cfg, const fs::path& out, const fs::path& cache) {
  const auto r = run_stragglersim(
      fmt::format(
          "run '{}' --out '{}' --f-star-cache '{}'", cfg.string(), out.string(), cache.string()),
      out.parent_path());
  REQUIRE(r.status == 0);
  return nlohmann::json::parse(slurp(out / "summary.json"));
}

std::vector<fs::path> entries(const fs::path& cache) {
  std::vector<fs::path> out;
  for (const auto& e : fs::directory_iterator(cache)) {
    out.push_back(e.path());
  }
  return out;
}

}  // namespace

TEST_CASE("f* cache: one solve then a hit with the same bytes", "[experiments][fstar]") {
  const auto dir = stragglersim::testing::scratch_dir("plan_optimum_test", "hit");
  const auto cache = dir / "f_star_cache";
  const auto cfg = write_config(dir, 3);
  const auto first = run_with_cache(cfg, dir / "a", cache);
  CHECK(first["f_star_source"] == "solved");
  CHECK(first["f_star_method"] == "newton");
  CHECK(first["f_star_stop"] == "newton decrement");
  REQUIRE(entries(cache).size() == 1);  // no temporary left behind
  const auto second = run_with_cache(cfg, dir / "b", cache);
  CHECK(second["f_star_source"] == "cache");
  // The same double, and the same certificate.
  CHECK(second["f_star"].dump() == first["f_star"].dump());
  CHECK(second["f_star_newton_decrement"] == first["f_star_newton_decrement"]);
  CHECK(second["f_star_iterations"] == first["f_star_iterations"]);
  CHECK(second["time_to_relative_suboptimality"] == first["time_to_relative_suboptimality"]);
  // Another data set (seed) is another entry.
  const auto other = run_with_cache(write_config(dir, 4), dir / "c", cache);
  CHECK(other["f_star_source"] == "solved");
  CHECK(other["f_star"] != first["f_star"]);
  CHECK(entries(cache).size() == 2);
}

TEST_CASE("f* cache: a corrupted entry is re-solved with a warning", "[experiments][fstar]") {
  const auto dir = stragglersim::testing::scratch_dir("plan_optimum_test", "corrupt");
  const auto cache = dir / "f_star_cache";
  const auto cfg = write_config(dir, 3);
  const auto first = run_with_cache(cfg, dir / "a", cache);
  REQUIRE(entries(cache).size() == 1);
  const fs::path entry = entries(cache).front();
  const std::string good = slurp(entry);
  // A changed digit of f* (checksum mismatch), then a truncated file (not JSON).
  std::string changed = good;
  const auto at = changed.find("\"f_star\":") + 12;
  changed[at] = changed[at] == '1' ? '2' : '1';
  for (const std::string& bad : {changed, good.substr(0, good.size() / 2)}) {
    std::ofstream(entry, std::ios::trunc) << bad;
    const auto r = run_stragglersim(fmt::format("run '{}' --out '{}' --f-star-cache '{}' --force",
                                                cfg.string(),
                                                (dir / "b").string(),
                                                cache.string()),
                                    dir);
    REQUIRE(r.status == 0);
    CHECK_THAT(r.err, Catch::Contains("warning: f* cache: ignoring " + entry.string()));
    const auto s = nlohmann::json::parse(slurp(dir / "b" / "summary.json"));
    CHECK(s["f_star_source"] == "solved");
    CHECK(s["f_star"].dump() == first["f_star"].dump());
    CHECK(slurp(entry) == good);  // rewritten whole
  }
}
