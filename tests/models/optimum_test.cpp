#include "models/optimum.h"

#include <catch2/catch.hpp>
#include <cstdint>
#include <memory>
#include <string>

#include "models/base/data_traffic.h"
#include "models/synthetic_data.h"
#include "models/tabular_synthetic_data.h"

namespace {

using stragglersim::models::Dataset;
using stragglersim::models::DenseRows;
using stragglersim::models::LossModel;
using stragglersim::models::make_least_squares_loss;
using stragglersim::models::make_logistic_loss;
using stragglersim::models::Objective;
using stragglersim::models::Optimum;
using stragglersim::models::OptimumOptions;
using stragglersim::models::solve_optimum;
using stragglersim::models::SparseRows;
using Solver = OptimumOptions::Solver;

std::shared_ptr<const LossModel> loss_named(const std::string& name) {
  return name == "logistic" ? std::shared_ptr<const LossModel>(make_logistic_loss())
                            : std::shared_ptr<const LossModel>(make_least_squares_loss());
}

Objective objective_of(Dataset data, const std::string& loss, double l2) {
  return {std::make_shared<const Dataset>(std::move(data)), loss_named(loss), l2, 4};
}

Dataset dense_mixture(Eigen::Index m, Eigen::Index p, std::uint64_t seed) {
  return stragglersim::models::make_gaussian_mixture({m, p, 1.0, seed, 10.0});
}

Dataset sparse_of(const Dataset& dense) {
  return Dataset{SparseRows(std::get<DenseRows>(dense.features).sparseView()), dense.labels};
}

double relative_difference(const Eigen::VectorXd& a, const Eigen::VectorXd& b) {
  return (a - b).norm() / std::max(1e-300, b.norm());
}

/// The certificate recomputed here from the data: ‖∇f(x)‖ ≤ 1e-10·max(1, ‖∇f(0)‖).
void check_certificate(const Objective& f, const Optimum& opt) {
  const double at_zero = f.gradient(Eigen::VectorXd::Zero(f.dimension())).norm();
  const double norm = f.gradient(opt.x).norm();
  CHECK(opt.converged);
  CHECK(opt.failure.empty());
  CHECK(norm == opt.gradient_norm);
  CHECK(norm <= 1e-10 * std::max(1.0, at_zero));
}

/// The iterative solve against the exact one on the same objective. At the default certificate:
/// f* to 1e-9 relative (of f*, or of f(0) when f* is an interpolating 0), and x within the PL
/// bound ‖x − x*‖ ≤ ‖∇f(x)‖/μ of each (both lie in the row space of A when λ₂ = 0); with the
/// certificate tightened to 1e-13, x to 1e-9 relative.
void check_agreement(const Objective& f, const std::string& method) {
  const Optimum exact = solve_optimum(f, {Solver::kExact});
  const Optimum iterative = solve_optimum(f, {Solver::kIterative});
  CHECK(iterative.method == method);
  check_certificate(f, iterative);
  // f* relative to itself, or to f(0) when the data are interpolated (λ₂ = 0, m < p: f* ≈ 0).
  const double f0 = f.value(Eigen::VectorXd::Zero(f.dimension()));
  const double scale = std::abs(exact.value) > 1e-12 * f0 ? std::abs(exact.value) : f0;
  CHECK(std::abs(iterative.value - exact.value) <= 1e-9 * scale);
  const double mu = *f.pl_constant();
  CHECK((iterative.x - exact.x).norm() <= (iterative.gradient_norm + exact.gradient_norm) / mu);
  const Optimum tight = solve_optimum(f, {Solver::kIterative, 1e-13});
  CHECK(tight.converged);
  CHECK(relative_difference(tight.x, exact.x) <= 1e-9);
}

}  // namespace

TEST_CASE("optimum: conjugate gradient agrees with the normal equations", "[models][optimum]") {
  SECTION("dense, m > p, l2 > 0") {
    check_agreement(objective_of(dense_mixture(300, 40, 3), "least_squares", 0.01),
                    "conjugate gradient");
  }
  SECTION("sparse, m > p, l2 > 0") {
    check_agreement(
        objective_of(
            stragglersim::models::make_kc_housing_like({600, 120, 0.5, 5}), "least_squares", 1e-3),
        "conjugate gradient");
  }
  SECTION("sparse, m < p and l2 = 0: both give the minimum-norm solution") {
    check_agreement(objective_of(sparse_of(dense_mixture(60, 150, 7)), "least_squares", 0.0),
                    "conjugate gradient");
  }
}

TEST_CASE("optimum: L-BFGS agrees with Newton", "[models][optimum]") {
  SECTION("dense") {
    check_agreement(objective_of(dense_mixture(400, 30, 11), "logistic", 0.01), "l-bfgs");
  }
  SECTION("sparse one-hot, small l2") {
    check_agreement(
        objective_of(
            stragglersim::models::make_amazon_like({2000, 300, 0.9, 13}), "logistic", 1e-4),
        "l-bfgs");
  }
}

TEST_CASE("optimum: the automatic choice", "[models][optimum]") {
  const Objective small = objective_of(dense_mixture(200, 20, 17), "logistic", 0.01);
  CHECK(stragglersim::models::exact_solver_fits(small));
  CHECK(solve_optimum(small).method == "newton");
  // 2000 × 3000² = 1.8·10¹⁰ flops per Hessian: over the exact budget although p ≤ 4000.
  const Objective wide =
      objective_of(stragglersim::models::make_amazon_like({2000, 3000, 0.9, 19}), "logistic", 1e-4);
  CHECK_FALSE(stragglersim::models::exact_solver_fits(wide));
}

TEST_CASE("optimum: certified above 4000 sparse features", "[models][optimum]") {
  SECTION("logistic, amazon-like 3000 x 6000") {
    const Objective f = objective_of(
        stragglersim::models::make_amazon_like({3000, 6000, 0.9, 23}), "logistic", 1e-4);
    CHECK_FALSE(stragglersim::models::exact_solver_fits(f));
    const Optimum opt = solve_optimum(f);
    CHECK(opt.method == "l-bfgs");
    check_certificate(f, opt);
    // The optimum lies below f(0) = log 2 and every point tried near it.
    CHECK(opt.value < std::log(2.0));
    const Eigen::VectorXd g = f.gradient(Eigen::VectorXd::Zero(f.dimension()));
    CHECK(opt.value <= f.value(opt.x - 1e-3 * g));
  }
  SECTION("least squares, kc-housing-like 3000 x 5000 (m < p)") {
    const Objective f = objective_of(
        stragglersim::models::make_kc_housing_like({3000, 5000, 0.5, 29}), "least_squares", 1e-4);
    const Optimum opt = solve_optimum(f);
    CHECK(opt.method == "conjugate gradient");
    check_certificate(f, opt);
  }
}

TEST_CASE("optimum: an iterative solve out of budget fails with its reason", "[models][optimum]") {
  const Objective f =
      objective_of(stragglersim::models::make_amazon_like({2000, 300, 0.9, 13}), "logistic", 1e-4);
  const Optimum opt = solve_optimum(f, {Solver::kIterative, 1e-10, 3});
  CHECK_FALSE(opt.converged);
  CHECK(opt.iterations == 3);
  CHECK_THAT(opt.failure, Catch::StartsWith("l-bfgs did not reach ‖∇f‖ ≤ "));
  CHECK_THAT(opt.failure, Catch::Contains("within 3 iterations"));
  const Objective g = objective_of(dense_mixture(300, 40, 3), "least_squares", 0.01);
  const Optimum cg = solve_optimum(g, {Solver::kIterative, 1e-10, 2});
  CHECK_FALSE(cg.converged);
  CHECK_THAT(cg.failure, Catch::StartsWith("conjugate gradient did not reach ‖∇f‖ ≤ "));
}

TEST_CASE("optimum: Newton stops on its decrement in a fixed number of iterations",
          "[models][optimum][fstar]") {
  // The shape of the paper's logistic run (100 features, l2 = 0.001), fewer rows.
  const Objective f = objective_of(
      stragglersim::models::make_gaussian_mixture({8000, 100, 1.5, 3, 1.0}), "logistic", 1e-3);
  const Optimum opt = solve_optimum(f);
  CHECK(opt.method == "newton");
  CHECK(opt.converged);
  CHECK(opt.stop == "newton decrement");
  CHECK(opt.iterations == 8);
  CHECK(opt.iteration_limit == 50);
  REQUIRE(opt.newton_decrement);
  CHECK(0.5 * *opt.newton_decrement <= 1e-16 * std::max(1.0, std::abs(opt.value)));
  // One Hessian, one full step and one gradient per iteration, plus the dense copy, the first
  // gradient, the last Hessian and the final f and gradient: no backtracking on rounding noise.
  CHECK(opt.data_passes <= 3 * opt.iterations + 5 + 4);
  CHECK(opt.gradient_norm == f.gradient(opt.x).norm());
  CHECK(opt.gradient_norm <= 1e-10);
  // L-BFGS to a tight certificate lands on the same f*.
  const Optimum lbfgs = solve_optimum(f, {Solver::kIterative, 1e-13});
  CHECK(lbfgs.converged);
  CHECK(std::abs(lbfgs.value - opt.value) <= 1e-13 * opt.value);
}

TEST_CASE("optimum: the same bytes for every thread count", "[models][optimum][fstar]") {
  const Objective f = objective_of(
      stragglersim::models::make_gaussian_mixture({5000, 60, 1.5, 5, 10.0}), "logistic", 1e-3);
  const Optimum one = solve_optimum(f);
  for (const int threads : {2, 3}) {
    stragglersim::models::WorkerPool pool(threads);
    for (const Solver solver : {Solver::kExact, Solver::kIterative}) {
      const Optimum serial = solver == Solver::kExact ? one : solve_optimum(f, {solver});
      const Optimum parallel = solve_optimum(f, {solver}, &pool);
      CHECK(parallel.value == serial.value);
      CHECK(parallel.x == serial.x);
      CHECK(parallel.iterations == serial.iterations);
      CHECK(parallel.data_passes == serial.data_passes);
    }
  }
}

TEST_CASE("optimum: every solver's data passes are the bytes it read", "[models][optimum][fstar]") {
  // Dense data, where every pass (chunked or not, over the data or its dense copy) reads
  // Dataset::stored_bytes().
  for (const std::string loss : {"logistic", "least_squares"}) {
    const Objective f = objective_of(
        stragglersim::models::make_gaussian_mixture({3000, 40, 1.5, 9, 10.0}), loss, 1e-3);
    for (const Solver solver : {Solver::kExact, Solver::kIterative}) {
      CAPTURE(loss, solver == Solver::kExact);
      const std::int64_t before = stragglersim::models::data_bytes_read();
      const Optimum opt = solve_optimum(f, {solver});
      const std::int64_t read = stragglersim::models::data_bytes_read() - before;
      REQUIRE(opt.converged);
      // At least the first gradient and the final f and gradient.
      CHECK(opt.data_passes >= 3);
      CHECK(read == opt.data_passes * f.data().stored_bytes());
    }
  }
}
