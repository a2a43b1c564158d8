// An MPI worker's partial load (docs/mpi_backend.md "Data"): only the training rows of its own
// partitions, read or generated from the same source. Checked against the full load of the same
// config: the training row count, every held partition's gradient and the worker's coded
// message bitwise equal, and the rows held bounded by the worker's share (plus the alignment
// padding), for generated dense and sparse data with a train/test split and for LIBSVM and CSV
// files.

#include <unistd.h>

#include <algorithm>
#include <boost/random/mersenne_twister.hpp>
#include <boost/random/normal_distribution.hpp>
#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>
#include <set>
#include <span>
#include <string>

#include "experiments/config/config_error.h"
#include "experiments/config/data_source.h"
#include "experiments/config/json_reader.h"
#include "experiments/config/memory_budget.h"
#include "experiments/config/run_plan.h"
#include "models/loss_model.h"
#include "models/objective.h"
#include "sim/backends/mpi_session.h"
#include "sim/scheme.h"
#include "tests/experiments/config/plan_support.h"
#include "tests/idx_fixture.h"

namespace stragglersim::experiments {
namespace {

std::filesystem::path partial_scratch() { return testing::process_scratch("partial_load_test"); }

LoadedData load(const nlohmann::json& data, bool partial) {
  JsonReader reader(data, "cfg.json", "/data");
  return load_data(reader, partial_scratch(), 5, partial);
}

Eigen::VectorXd point(Eigen::Index p) {
  boost::random::mt19937_64 engine(99);
  boost::random::normal_distribution<double> normal(0.0, 1.0);
  Eigen::VectorXd x(p);
  for (Eigen::Index k = 0; k < p; ++k) {
    x[k] = normal(engine);
  }
  return x;
}

bool bitwise_equal(const Eigen::VectorXd& a, const Eigen::VectorXd& b) {
  return a.size() == b.size() && std::equal(a.data(), a.data() + a.size(), b.data());
}

/// Loads `data` whole and, for every one of `k` partitions held in pairs {2h, 2h + 1} (FRC
/// d = 2's worker supports), partially; compares gradients bit for bit and the rows held.
void check_partial_equals_full(const nlohmann::json& data, int k, const std::string& loss_kind) {
  LoadedData full = load(data, false);
  const std::shared_ptr<const models::LossModel> loss = loss_kind == "least_squares"
                                                            ? models::make_least_squares_loss()
                                                            : models::make_logistic_loss();
  const models::Objective whole(full.train, loss, 0.0, k);
  const Eigen::VectorXd x = point(whole.dimension());
  for (int first = 0; first < k; first += 2) {
    INFO("partitions " << first << ", " << first + 1);
    LoadedData part = load(data, true);
    REQUIRE(part.partial.has_value());
    CHECK(part.train == nullptr);
    CHECK(part.train_rows() == full.train->rows());
    load_held_partitions(part, k, {first, first + 1});
    const models::Objective mine =
        models::Objective::held_partitions(part.train, loss, 0.0, k, part.train_rows(), *part.held);
    CHECK(mine.partial());
    CHECK(mine.rows() == whole.rows());
    CHECK(mine.dimension() == whole.dimension());
    // Rows held: exactly the two partitions' rows plus at most kRowAlignment − 1 padding rows
    // before each, never the whole set.
    const Eigen::Index share = whole.partition(first).size() + whole.partition(first + 1).size();
    CHECK(mine.rows_held() >= share);
    CHECK(mine.rows_held() <= share + 2 * (models::kRowAlignment - 1));
    CHECK(mine.rows_held() < whole.rows());
    Eigen::VectorXd g_full(whole.dimension());
    Eigen::VectorXd g_mine(whole.dimension());
    for (const int j : {first, first + 1}) {
      whole.partition_gradient(j, x, g_full);
      mine.partition_gradient(j, x, g_mine);
      CHECK(bitwise_equal(g_full, g_mine));
      CHECK(g_full.norm() > 0.0);
    }
  }
}

/// Plans `config` (an mpi run) on rank 0 and as each of its workers: every worker holds at most
/// the rows of the partitions of its code support plus 7 alignment rows before each, and its
/// coded message is bitwise rank 0's. Returns the most rows a worker holds.
Eigen::Index check_worker_plans(const nlohmann::json& config) {
  const RunPlan master = plan_run(config, "cfg.json", partial_scratch());
  CHECK_FALSE(master.objective->partial());
  const Eigen::VectorXd x = point(master.objective->dimension());
  Eigen::VectorXd y_full(x.size());
  Eigen::VectorXd y_mine(x.size());
  const auto gradient_of = [&x](const models::Objective& o) {
    return [&o, &x](int j) {
      Eigen::VectorXd g(o.dimension());
      o.partition_gradient(j, x, g);
      return g;
    };
  };
  Eigen::Index most = 0;
  for (int w = 0; w < master.workers; ++w) {
    INFO("worker " << w);
    const RunPlan worker =
        plan_run(config, "cfg.json", partial_scratch(), PlanOptions{.mpi_worker = w});
    REQUIRE(worker.objective->partial());
    CHECK(worker.resolved == master.resolved);
    const std::span<const int> support = master.scheme.code->support(w);
    const std::set<int> held(support.begin(), support.end());
    Eigen::Index max_rows_held = 0;
    for (const int j : held) {
      max_rows_held += master.objective->partition(j).size() + models::kRowAlignment - 1;
    }
    CHECK(worker.objective->rows_held() <= max_rows_held);
    CHECK(worker.objective->rows_held() < master.objective->rows());
    most = std::max(most, worker.objective->rows_held());
    sim::coded_message(*master.scheme.code, w, gradient_of(*master.objective), y_full);
    sim::coded_message(*worker.scheme.code, w, gradient_of(*worker.objective), y_mine);
    CHECK(bitwise_equal(y_full, y_mine));
    CHECK(y_full.norm() > 0.0);
  }
  return most;
}

}  // namespace

TEST_CASE("data: a partial load holds only its partitions, bitwise the full load's gradients",
          "[experiments][data][mpi_data]") {
  SECTION("gaussian_mixture, split 0.2 (a permutation), odd width") {
    check_partial_equals_full({{"source", "synthetic"},
                               {"generator", "gaussian_mixture"},
                               {"rows", 1003},
                               {"features", 7},
                               {"test_fraction", 0.2}},
                              8,
                              "logistic");
  }
  SECTION("linear_regression, condition 100, no test set") {
    check_partial_equals_full({{"source", "synthetic"},
                               {"generator", "linear_regression"},
                               {"rows", 900},
                               {"features", 5},
                               {"condition", 100.0},
                               {"test_fraction", 0.0}},
                              6,
                              "least_squares");
  }
  SECTION("covtype_like, sparse and dense storage") {
    for (const char* storage : {"sparse", "dense"}) {
      INFO(storage);
      check_partial_equals_full({{"source", "synthetic"},
                                 {"generator", "covtype_like"},
                                 {"rows", 800},
                                 {"features", 300},
                                 {"storage", storage}},
                                8,
                                "logistic");
    }
  }
  SECTION("kc_housing_like (regression labels)") {
    check_partial_equals_full({{"source", "synthetic"},
                               {"generator", "kc_housing_like"},
                               {"rows", 640},
                               {"features", 80}},
                              4,
                              "least_squares");
  }
  SECTION("libsvm file, dense and sparse, with a split") {
    const auto path = partial_scratch() / "partial.svm";
    {
      std::ofstream out(path);
      boost::random::mt19937_64 engine(3);
      boost::random::normal_distribution<double> normal(0.0, 1.0);
      for (int i = 0; i < 517; ++i) {
        out << (normal(engine) > 0.0 ? "+1" : "-1");
        for (int k = 1; k <= 9; ++k) {
          if (normal(engine) > 0.3) {
            out << ' ' << k << ':' << normal(engine);
          }
        }
        out << (i % 50 == 0 ? "\n\n" : "\n");  // blank lines are skipped alike
      }
    }
    for (const char* storage : {"dense", "sparse"}) {
      INFO(storage);
      check_partial_equals_full({{"source", "libsvm"},
                                 {"path", path.string()},
                                 {"storage", storage},
                                 {"test_fraction", 0.25}},
                                6,
                                "logistic");
    }
  }
  SECTION("fashion_mnist IDX files, gzip and plain, all rows or the first 100") {
    for (const bool gzip : {true, false}) {
      const auto dir = partial_scratch() / (gzip ? "fashion_gz" : "fashion_plain");
      std::filesystem::create_directories(dir);
      testing::write_fashion_fixture(dir, 700, 90, 6, 5, gzip, 21);
      for (const int rows : {0, 100}) {
        INFO((gzip ? "gzip" : "plain") << ", rows " << rows);
        check_partial_equals_full({{"source", "fashion_mnist"},
                                   {"dir", dir.string()},
                                   {"classes", {1, 8}},
                                   {"rows", rows}},
                                  8,
                                  "logistic");
      }
    }
  }
  SECTION("csv file with a header, labels 0/1") {
    const auto path = partial_scratch() / "partial.csv";
    {
      std::ofstream out(path);
      out << "a,b,c,label\n";
      boost::random::mt19937_64 engine(4);
      boost::random::normal_distribution<double> normal(0.0, 1.0);
      for (int i = 0; i < 401; ++i) {
        out << normal(engine) << ',' << normal(engine) << ',' << normal(engine) << ','
            << (normal(engine) > 0.0 ? 1 : 0) << '\n';
      }
    }
    check_partial_equals_full({{"source", "csv"}, {"path", path.string()}}, 4, "least_squares");
  }
}

TEST_CASE("data: a partial load reports every row's labels and refuses a bad file alike",
          "[experiments][data][mpi_data]") {
  const auto path = partial_scratch() / "labels.csv";
  {
    std::ofstream out(path);
    out << "x,y\n";
    for (int i = 0; i < 40; ++i) {
      out << i << ',' << (i < 39 ? 1 : 2) << '\n';  // the only 2 is in the last row
    }
  }
  LoadedData part =
      load({{"source", "csv"}, {"path", path.string()}, {"test_fraction", 0.0}}, true);
  load_held_partitions(part, 4, {0});  // rows 0..9: labels 1 only
  REQUIRE(part.label_values.has_value());
  CHECK(part.label_values->values == std::vector<double>{1.0, 2.0});

  const auto bad = partial_scratch() / "bad.svm";
  {
    std::ofstream out(bad);
    out << "+1 1:0.5\n-1 2:x\n";
  }
  for (const bool partial : {false, true}) {
    try {
      (void)load({{"source", "libsvm"}, {"path", bad.string()}}, partial);
      FAIL("no error");
    } catch (const std::exception& e) {
      CHECK(std::string(e.what()).find("bad.svm:2: malformed feature; got '2:x'") !=
            std::string::npos);
    }
  }
}

TEST_CASE("data: an mpi run's worker plan holds only its code support's partitions",
          "[experiments][data][mpi_data]") {
  if (!sim::mpi_compiled_in()) {
    return;  // kind mpi is refused without MPI (tested in mpi_config_test.cpp)
  }
  const nlohmann::json config = {
      {"name", "partial"},
      {"seed", 3},
      {"workers", 8},
      {"data",
       {{"source", "synthetic"},
        {"generator", "gaussian_mixture"},
        {"rows", 1600},
        {"features", 12},
        {"test_fraction", 0.1}}},
      {"loss", {{"kind", "logistic"}, {"l2", 0.001}}},
      {"code", {{"kind", "frc"}, {"d", 2}}},
      {"stopping", {{"rule", "first_r"}, {"r", 4}}},
      {"delay", {{"kind", "shifted_exponential"}}},
      {"optimizer", {{"kind", "gd"}, {"step", "auto"}, {"iterations", 3}}},
      {"backend", {{"kind", "mpi"}}}};
  CHECK(check_worker_plans(config) <= 2 * 180 + 2 * 7);  // FRC d = 2 on 1440 rows, k = 8
}

TEST_CASE("data: a partial fashion_mnist load refuses bad IDX files as the full load does",
          "[experiments][data][mpi_data]") {
  for (const bool gzip : {true, false}) {
    INFO((gzip ? "gzip" : "plain"));
    const auto dir = partial_scratch() / (gzip ? "fashion_bad_gz" : "fashion_bad_plain");
    std::filesystem::remove_all(dir);
    std::filesystem::create_directories(dir);
    const std::string suffix = gzip ? ".gz" : "";
    const auto message = [&](bool partial) {
      try {
        (void)load({{"source", "fashion_mnist"}, {"dir", dir.string()}}, partial);
      } catch (const ConfigError& e) {
        return std::string(e.what());
      }
      return std::string("no error");
    };
    const auto same = [&](const std::string& expected_part) {
      const std::string full = message(false);
      CHECK(full.find(expected_part) != std::string::npos);
      CHECK(message(true) == full);
    };
    same("train-images-idx3-ubyte: cannot open file");  // an empty folder
    testing::write_fashion_fixture(dir, 30, 10, 2, 3, gzip, 1);
    CHECK(message(true) == "no error");
    const auto images = dir / ("train-images-idx3-ubyte" + suffix);
    // One image byte too many, then a label file of another count.
    testing::IdxByteVector pixels(30 * 2 * 3 + 1, 9);
    testing::write_idx_file(images, testing::idx_file({30, 2, 3}, pixels), gzip);
    same("trailing data after 180 bytes (30 x 2 x 3)");
    pixels.resize(29 * 2 * 3);
    testing::write_idx_file(images, testing::idx_file({29, 2, 3}, pixels), gzip);
    same("label count differs from the image count; got 30; expected 29");
    testing::write_fashion_fixture(dir, 30, 10, 2, 2, gzip, 1);
    testing::write_idx_file(dir / ("t10k-images-idx3-ubyte" + suffix),
                            testing::idx_file({10, 4, 1}, testing::IdxByteVector(40, 1)),
                            gzip);
    same("images are 4 x 1; expected 2 x 2 like the training images");
  }
}

TEST_CASE("data: a partial load of a data file notes only the rows it holds",
          "[experiments][data][mpi_data]") {
  const auto dir = partial_scratch() / "fashion_ledger";
  std::filesystem::create_directories(dir);
  testing::write_fashion_fixture(dir, 800, 100, 7, 4, true, 5);
  const nlohmann::json data = {{"source", "fashion_mnist"}, {"dir", dir.string()}};
  double full_bytes = 0.0;
  Eigen::Index m = 0;
  Eigen::Index p = 0;
  Eigen::Index test_rows = 0;
  {
    const MemoryLedgerScope ledger;
    const LoadedData full = load(data, false);
    m = full.train->rows();
    p = full.train->dimension();
    test_rows = full.test->rows();
    full_bytes = memory_planned();
  }
  // Train and test: 8 bytes a pixel, 8 a label.
  CHECK(full_bytes == static_cast<double>(8 * (m + test_rows) * (p + 1)));
  for (const std::vector<int>& held :
       {std::vector<int>{0, 1}, std::vector<int>{3}, std::vector<int>{5, 6}}) {
    INFO("partitions " << held.front() << " to " << held.back());
    const MemoryLedgerScope ledger;
    LoadedData part = load(data, true);
    CHECK(memory_planned() == 0.0);  // the survey keeps no image
    load_held_partitions(part, 8, held);
    const Eigen::Index rows_held = part.train->rows();  // the share plus alignment padding
    CHECK(memory_planned() == static_cast<double>(8 * rows_held * (p + 1)));
    CHECK(memory_planned() < full_bytes / 3.0);
  }
}

TEST_CASE("data: an mpi run's worker plan on fashion_mnist holds only its partitions",
          "[experiments][data][mpi_data]") {
  if (!sim::mpi_compiled_in()) {
    return;  // kind mpi is refused without MPI (tested in mpi_config_test.cpp)
  }
  const auto dir = partial_scratch() / "fashion_plan";
  std::filesystem::create_directories(dir);
  testing::write_fashion_fixture(dir, 1000, 120, 8, 8, false, 17);
  const nlohmann::json config = {
      {"name", "partial"},
      {"seed", 3},
      {"workers", 6},
      {"data", {{"source", "fashion_mnist"}, {"dir", dir.string()}, {"classes", {0, 6}}}},
      {"loss", {{"kind", "logistic"}, {"l2", 0.001}}},
      {"code", {{"kind", "cyclic_mds"}, {"s", 2}}},
      {"stopping", {{"rule", "decodable"}}},
      {"delay", {{"kind", "shifted_exponential"}}},
      {"optimizer", {{"kind", "gd"}, {"step", "auto"}, {"iterations", 3}}},
      {"backend", {{"kind", "mpi"}}}};
  // 1000 images of 10 random classes: about 200 rows of the pair.
  CHECK(check_worker_plans(config) > 0);
}

}  // namespace stragglersim::experiments
