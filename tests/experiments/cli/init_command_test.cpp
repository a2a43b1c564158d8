// `stragglersim init`: a starting config that `run` accepts as it is.
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

fs::path init_scratch(const std::string& name) {
  return stragglersim::testing::scratch_dir("init_command", name);
}

/// 40 rows of 3 features; labels 0/1 (two values) or i mod 3 (three), as LIBSVM or CSV.
void write_data(const fs::path& path, int classes, bool csv) {
  std::ofstream out(path);
  if (csv) {
    out << "a,b,c,label\n";
  }
  for (int i = 0; i < 40; ++i) {
    const int label = i % classes;
    const double a = 0.1 * i;
    const double b = 1.0 - 0.02 * i;
    const double c = (i % 5) * 0.3;
    if (csv) {
      out << fmt::format("{},{},{},{}\n", a, b, c, label);
    } else {
      out << fmt::format("{} 1:{} 2:{} 3:{}\n", label, a, b, c);
    }
  }
}

}  // namespace

TEST_CASE("init: a LIBSVM file gives a config run accepts", "[experiments][cli][init]") {
  const auto dir = init_scratch("libsvm");
  fs::create_directories(dir / "data" / "sub");
  write_data(dir / "data" / "train.libsvm", 2, false);
  const auto r = run_stragglersim(fmt::format("init --data '{}' --workers 4 -o '{}'",
                                              (dir / "data" / "train.libsvm").string(),
                                              (dir / "data" / "sub" / "cfg.json").string()),
                                  dir);
  REQUIRE(r.status == 0);
  CHECK(r.out.empty());
  CHECK(r.err.find("#   loss: logistic: the file's labels take two values") != std::string::npos);
  const auto config = nlohmann::json::parse(slurp(dir / "data" / "sub" / "cfg.json"));
  CHECK(config["workers"] == 4);
  CHECK(config["name"] == "train");
  CHECK(config["data"]["source"] == "libsvm");
  // Relative to the config's folder, where `run` resolves it.
  CHECK(config["data"]["path"] == "../train.libsvm");
  CHECK(config["loss"]["kind"] == "logistic");
  const auto run = run_stragglersim(
      fmt::format(
          "run '{}' -o '{}'", (dir / "data" / "sub" / "cfg.json").string(), (dir / "out").string()),
      dir);
  CHECK(run.status == 0);
  CHECK(fs::exists(dir / "out" / "summary.json"));
}

TEST_CASE("init: a CSV file of three labels gets least squares and runs",
          "[experiments][cli][init]") {
  const auto dir = init_scratch("csv");
  write_data(dir / "t.csv", 3, true);
  const auto r = run_stragglersim(
      fmt::format("init --data '{}' -o '{}'", (dir / "t.csv").string(), (dir / "c.json").string()),
      dir);
  REQUIRE(r.status == 0);
  const auto config = nlohmann::json::parse(slurp(dir / "c.json"));
  CHECK(config["data"] ==
        nlohmann::json({{"source", "csv"}, {"path", "t.csv"}, {"test_fraction", 0.2}}));
  CHECK(config["loss"]["kind"] == "least_squares");
  CHECK(config["workers"] == 8);
  CHECK(r.err.find("header") != std::string::npos);
  CHECK(run_stragglersim(
            fmt::format("run '{}' -o '{}'", (dir / "c.json").string(), (dir / "o").string()), dir)
            .status == 0);
}

TEST_CASE("init: a CSV without a label column or without a header line is said so",
          "[experiments][cli][init]") {
  const auto dir = init_scratch("csv_layouts");
  // 30 rows of three features, the last taking three values: no column named as a label.
  std::string rows;
  for (int i = 0; i < 30; ++i) {
    rows += fmt::format("{},{},{}\n", 0.1 * i, 1.0 - 0.02 * i, i % 3);
  }
  std::ofstream(dir / "features.csv") << "a,b,c\n" << rows;
  const auto named = run_stragglersim(
      fmt::format(
          "init --data '{}' -o '{}'", (dir / "features.csv").string(), (dir / "f.json").string()),
      dir);
  REQUIRE(named.status == 0);
  CHECK(named.err.find("#   loss: least_squares: the labels (column 'c', the last) take 3 values "
                       "(logistic needs two)") != std::string::npos);
  CHECK(named.err.find("# note: no column of features.csv is named as a label (label, y, target, "
                       "class, outcome, response), so the file may have no label column: the "
                       "last column 'c' is taken as the label. Add a label column to the file, or "
                       "name it with \"label_column\": \"<column>\" in data") != std::string::npos);
  // A header naming a label: no note.
  std::ofstream(dir / "labelled.csv") << "a,b,Target\n" << rows;
  const auto labelled = run_stragglersim(
      fmt::format(
          "init --data '{}' -o '{}'", (dir / "labelled.csv").string(), (dir / "l.json").string()),
      dir);
  REQUIRE(labelled.status == 0);
  CHECK(labelled.err.find("# note:") == std::string::npos);
  // No header line: the first row is data, the config says "header": false, and every row runs.
  std::ofstream(dir / "bare.csv") << rows;
  const auto bare = run_stragglersim(
      fmt::format(
          "init --data '{}' -o '{}'", (dir / "bare.csv").string(), (dir / "b.json").string()),
      dir);
  REQUIRE(bare.status == 0);
  const auto config = nlohmann::json::parse(slurp(dir / "b.json"));
  CHECK(config["data"]["header"] == false);
  CHECK(bare.err.find("the first line is a row of numbers, so the file has no header line") !=
        std::string::npos);
  REQUIRE(run_stragglersim(
              fmt::format("run '{}' -o '{}'", (dir / "b.json").string(), (dir / "o").string()), dir)
              .status == 0);
  const auto summary = nlohmann::json::parse(slurp(dir / "o" / "summary.json"));
  CHECK(summary["config"]["data"]["header"] == false);
}

TEST_CASE("init: without data the config goes to stdout and runs", "[experiments][cli][init]") {
  const auto dir = init_scratch("stdout");
  const auto r = run_stragglersim("init --workers 6", dir);
  REQUIRE(r.status == 0);
  const auto config = nlohmann::json::parse(r.out);
  CHECK(config["data"]["source"] == "synthetic");
  CHECK(config["workers"] == 6);
  CHECK(r.err.rfind("# what the keys mean", 0) == 0);
  std::ofstream(dir / "s.json") << r.out;
  CHECK(run_stragglersim(
            fmt::format("run '{}' -o '{}'", (dir / "s.json").string(), (dir / "o").string()), dir)
            .status == 0);
}

TEST_CASE("init: bad input exits 2 and writes nothing", "[experiments][cli][init]") {
  const auto dir = init_scratch("bad");
  std::ofstream(dir / "x.parquet") << "1 1:2\n";
  const auto ext = run_stragglersim(
      fmt::format(
          "init --data '{}' -o '{}'", (dir / "x.parquet").string(), (dir / "c.json").string()),
      dir);
  CHECK(ext.status == 2);
  CHECK(ext.err.find("--data: unknown file format; got \"" + (dir / "x.parquet").string() +
                     "\"; expected a name ending in .csv") != std::string::npos);
  const auto missing = run_stragglersim(
      fmt::format("init --data '{}' -o '{}'", (dir / "no.csv").string(), (dir / "c.json").string()),
      dir);
  CHECK(missing.status == 2);
  CHECK(missing.err.find("--data: ") != std::string::npos);
  // More workers than rows: the plan refuses it, as run would.
  write_data(dir / "small.libsvm", 2, false);
  const auto big = run_stragglersim(fmt::format("init --data '{}' --workers 64 -o '{}'",
                                                (dir / "small.libsvm").string(),
                                                (dir / "c.json").string()),
                                    dir);
  CHECK(big.status == 2);
  CHECK(big.err.find("more partitions than training rows") != std::string::npos);
  CHECK_FALSE(fs::exists(dir / "c.json"));
}
