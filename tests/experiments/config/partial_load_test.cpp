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
#include <string>

#include "experiments/config/data_source.h"
#include "experiments/config/json_reader.h"
#include "experiments/config/run_plan.h"
#include "models/loss_model.h"
#include "models/objective.h"
#include "sim/mpi_session.h"
#include "sim/scheme.h"

namespace stragglersim::experiments {
namespace {

std::filesystem::path scratch() {
  const auto dir = std::filesystem::temp_directory_path() /
                   ("stragglersim_partial_load_test_" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  return dir;
}

LoadedData load(const nlohmann::json& data, bool partial) {
  JsonReader reader(data, "cfg.json", "/data");
  return load_data(reader, scratch(), 5, partial);
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
    const auto path = scratch() / "partial.svm";
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
  SECTION("csv file with a header, labels 0/1") {
    const auto path = scratch() / "partial.csv";
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
  const auto path = scratch() / "labels.csv";
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

  const auto bad = scratch() / "bad.svm";
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
  const RunPlan master = plan_run(config, "cfg.json", scratch());
  CHECK_FALSE(master.objective->partial());
  const Eigen::VectorXd x = point(master.objective->dimension());
  Eigen::VectorXd y_full(x.size());
  Eigen::VectorXd y_mine(x.size());
  for (int w = 0; w < 8; ++w) {
    INFO("worker " << w);
    const RunPlan worker = plan_run(config, "cfg.json", scratch(), PlanOptions{.mpi_worker = w});
    REQUIRE(worker.objective->partial());
    CHECK(worker.resolved == master.resolved);
    CHECK(worker.objective->rows_held() <= 2 * 180 + 2 * 7);  // 1440 training rows, 8 partitions
    const auto gradient_of = [&x](const models::Objective& o) {
      return [&o, &x](int j) {
        Eigen::VectorXd g(o.dimension());
        o.partition_gradient(j, x, g);
        return g;
      };
    };
    sim::coded_message(*master.scheme.code, w, gradient_of(*master.objective), y_full);
    sim::coded_message(*worker.scheme.code, w, gradient_of(*worker.objective), y_mine);
    CHECK(bitwise_equal(y_full, y_mine));
  }
}

}  // namespace stragglersim::experiments
