// Step schedules and heavy-ball momentum (docs/model.md §2 "Step schedules") against their
// defining formulas and independent scalar loops.
#include "sim/optimizer.h"

#include <array>
#include <catch2/catch.hpp>
#include <cmath>
#include <numbers>
#include <vector>

namespace stragglersim::sim {
namespace {

StepSchedule inverse_t(double half_life) {
  StepSchedule s;
  s.kind = StepSchedule::Kind::kInverseT;
  s.half_life = half_life;
  return s;
}

StepSchedule cosine(std::uint64_t horizon, double floor) {
  StepSchedule s;
  s.kind = StepSchedule::Kind::kCosine;
  s.horizon = horizon;
  s.floor = floor;
  return s;
}

/// The gradient of f(x) = ½ Σ_i a_i x_i² − Σ_i b_i x_i, a diagonal quadratic.
Eigen::VectorXd quadratic_gradient(const Eigen::VectorXd& x) {
  const Eigen::Vector3d a(1.0, 4.0, 0.25);
  const Eigen::Vector3d b(1.0, -2.0, 0.5);
  return a.cwiseProduct(x) - b;
}

}  // namespace

TEST_CASE("sim: step schedules at their defining points", "[sim][optimizer]") {
  const double g = 0.3;
  // Constant: γ at every t.
  for (const std::uint64_t t : {0U, 1U, 7U, 1000000U}) {
    CHECK(StepSchedule{}.at(g, t) == g);
  }
  // inverse_t: γ at t = 0, γ/2 at the half-life, γ/4 at three half-lives, γ/(1 + t/h) between.
  const StepSchedule inv = inverse_t(10.0);
  CHECK(inv.at(g, 0) == g);
  CHECK(inv.at(g, 10) == Approx(g / 2).epsilon(1e-15));
  CHECK(inv.at(g, 30) == Approx(g / 4).epsilon(1e-15));
  CHECK(inv.at(g, 5) == Approx(g / 1.5).epsilon(1e-15));
  // cosine: γ at 0, the midpoint of γ and fγ at T/2, fγ at T and after, and
  // γ(f + (1 − f)(1 + cos(πt/T))/2) at every t in between.
  for (const double floor : {0.0, 0.1, 1.0}) {
    const StepSchedule c = cosine(100, floor);
    CHECK(c.at(g, 0) == Approx(g).epsilon(1e-15));
    CHECK(c.at(g, 50) == Approx(g * (floor + (1 - floor) / 2)).epsilon(1e-15));
    CHECK(c.at(g, 100) == Approx(g * floor).margin(1e-16));
    CHECK(c.at(g, 250) == Approx(g * floor).margin(1e-16));
    for (std::uint64_t t = 0; t <= 100; ++t) {
      const double expected =
          g * (floor + (1 - floor) * 0.5 *
                           (1 + std::cos(std::numbers::pi * static_cast<double>(t) / 100.0)));
      CHECK(c.at(g, t) == Approx(expected).epsilon(1e-14).margin(1e-17));
      if (t > 0) {
        CHECK(c.at(g, t) <= c.at(g, t - 1));  // non-increasing
      }
    }
  }
  CHECK(StepSchedule{}.name() == "constant");
  CHECK(inv.name() == "inverse_t");
  CHECK(cosine(5, 0).name() == "cosine");
}

TEST_CASE("sim: gd with momentum 0 and a constant step is plain gd to the bit",
          "[sim][optimizer]") {
  const Eigen::VectorXd x0 = Eigen::Vector3d(0.5, -1.0, 2.0);
  GradientDescent a(x0, 0.2);
  GradientDescent b(x0, 0.2, StepSchedule{}, 0.0);
  Eigen::VectorXd x = x0;
  for (int t = 0; t < 20; ++t) {
    const Eigen::VectorXd grad = quadratic_gradient(x);
    x -= 0.2 * grad;
    a.step(quadratic_gradient(a.iterate()));
    b.step(quadratic_gradient(b.iterate()));
    REQUIRE(a.iterate() == x);
    REQUIRE(b.iterate() == x);
  }
}

TEST_CASE("sim: heavy-ball momentum and schedules follow an independent scalar loop",
          "[sim][optimizer]") {
  // Every combination of a schedule and a momentum, 40 steps on the diagonal quadratic,
  // coordinate by coordinate in plain doubles: v ← m v + g, x ← x − γ_t v.
  const std::vector<StepSchedule> schedules = {StepSchedule{}, inverse_t(7.0), cosine(40, 0.05)};
  for (const auto& schedule : schedules) {
    for (const double m : {0.0, 0.5, 0.9}) {
      CAPTURE(schedule.name(), m);
      const Eigen::VectorXd x0 = Eigen::Vector3d(0.5, -1.0, 2.0);
      GradientDescent opt(x0, 0.2, schedule, m);
      std::vector<double> x(x0.data(), x0.data() + 3);
      std::vector<double> v(3, 0.0);
      const std::array<double, 3> a = {1.0, 4.0, 0.25};
      const std::array<double, 3> b = {1.0, -2.0, 0.5};
      for (std::uint64_t t = 0; t < 40; ++t) {
        const double gamma = schedule.at(0.2, t);
        for (std::size_t i = 0; i < 3; ++i) {
          v[i] = m * v[i] + (a[i] * x[i] - b[i]);
          x[i] -= gamma * v[i];
        }
        opt.step(quadratic_gradient(opt.iterate()));
        for (std::size_t i = 0; i < 3; ++i) {
          REQUIRE(opt.iterate()[static_cast<Eigen::Index>(i)] ==
                  Approx(x[i]).epsilon(1e-13).margin(1e-15));
        }
      }
    }
  }
}

TEST_CASE("sim: momentum reaches the minimiser of an ill-conditioned quadratic sooner",
          "[sim][optimizer]") {
  // κ = 16 (curvatures 0.25 … 4), γ = 1/4: plain GD contracts the flat coordinate by 1 − 1/16
  // per step; Polyak's momentum m = ((√κ − 1)/(√κ + 1))² = 0.36 with γ = 4/(√L + √μ)² = 16/25
  // contracts by about √m = 0.6.
  const Eigen::VectorXd x0 = Eigen::Vector3d::Zero();
  const Eigen::VectorXd x_star = Eigen::Vector3d(1.0, -0.5, 2.0);
  GradientDescent plain(x0, 0.25);
  GradientDescent heavy(x0, 16.0 / 25.0, StepSchedule{}, 0.36);
  for (int t = 0; t < 60; ++t) {
    plain.step(quadratic_gradient(plain.iterate()));
    heavy.step(quadratic_gradient(heavy.iterate()));
  }
  const double plain_error = (plain.iterate() - x_star).norm();
  const double heavy_error = (heavy.iterate() - x_star).norm();
  // (15/16)^60 · 2 ≈ 0.042 against at most 60 · 0.6^59 · 2 ≈ 1e-11.
  CHECK(plain_error == Approx(2.0 * std::pow(15.0 / 16.0, 60)).epsilon(1e-6));
  CHECK(heavy_error < 1e-9);
}

TEST_CASE("sim: nesterov takes its gradient step with the scheduled step", "[sim][optimizer]") {
  const Eigen::VectorXd x0 = Eigen::Vector3d(0.5, -1.0, 2.0);
  const StepSchedule schedule = inverse_t(3.0);
  Nesterov opt(x0, 0.2, 0.0, schedule);
  Eigen::VectorXd x = x0;
  Eigen::VectorXd y = x0;
  for (std::uint64_t t = 0; t < 25; ++t) {
    const Eigen::VectorXd previous = x;
    x = y - schedule.at(0.2, t) * quadratic_gradient(y);
    const double td = static_cast<double>(t);
    y = x + td / (td + 3.0) * (x - previous);
    opt.step(quadratic_gradient(opt.query_point()));
    REQUIRE(opt.iterate() == x);
    REQUIRE(opt.query_point() == y);
  }
}

TEST_CASE("sim: erasurehead_agd follows the reference code's update", "[sim][optimizer]") {
  // The update as the reference code writes it, coordinate by coordinate: theta = 2/(i + 2),
  // y = (1 - theta) beta + theta u, beta' = y - eta g(beta), u = beta + (beta' - beta)/theta.
  const Eigen::VectorXd x0 = Eigen::Vector3d(0.5, -1.0, 2.0);
  for (const auto& schedule : {StepSchedule{}, inverse_t(4.0)}) {
    ReferenceAgd opt(x0, 0.2, schedule);
    CHECK(opt.name() == "erasurehead_agd");
    CHECK(opt.queries_iterate());
    std::array<double, 3> beta = {0.5, -1.0, 2.0};
    std::array<double, 3> u = {0.0, 0.0, 0.0};
    const std::array<double, 3> a = {1.0, 4.0, 0.25};
    const std::array<double, 3> b = {1.0, -2.0, 0.5};
    for (std::uint64_t i = 0; i < 30; ++i) {
      const double theta = 2.0 / (static_cast<double>(i) + 2.0);
      const double eta = schedule.at(0.2, i);
      for (std::size_t k = 0; k < 3; ++k) {
        const double g = a[k] * beta[k] - b[k];
        const double y = (1 - theta) * beta[k] + theta * u[k];
        const double next = y - eta * g;
        u[k] = beta[k] + (next - beta[k]) / theta;
        beta[k] = next;
      }
      opt.step(quadratic_gradient(opt.query_point()));
      for (std::size_t k = 0; k < 3; ++k) {
        REQUIRE(opt.iterate()[static_cast<Eigen::Index>(k)] ==
                Approx(beta[k]).epsilon(1e-13).margin(1e-15));
      }
    }
  }
  // It approaches x* = (1, -0.5, 2) of the quadratic at a step within 1/L (no restart: slowly,
  // with the momentum's oscillation; 2.9e-3 after 400 steps, from 2.3 at the start).
  ReferenceAgd opt(x0, 0.2);
  const Eigen::Vector3d x_star(1.0, -0.5, 2.0);
  double after_100 = 0.0;
  for (int t = 1; t <= 400; ++t) {
    opt.step(quadratic_gradient(opt.iterate()));
    after_100 = t == 100 ? (opt.iterate() - x_star).norm() : after_100;
  }
  CHECK((opt.iterate() - x_star).norm() < 1e-2);
  CHECK((opt.iterate() - x_star).norm() < after_100);
}

}  // namespace stragglersim::sim
