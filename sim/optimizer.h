#pragma once
// First-order optimisers driven by the master with the decoded gradient estimate
// ĝ + λ₂·y (the regulariser's gradient added exactly, docs/model.md).

#include <Eigen/Core>
#include <memory>
#include <string>

namespace stragglersim::sim {

class Optimizer {
 public:
  virtual ~Optimizer() = default;
  [[nodiscard]] virtual std::string name() const = 0;
  /// The point at which the next gradient is estimated (y_t).
  [[nodiscard]] virtual const Eigen::VectorXd& query_point() const = 0;
  /// The iterate x_t whose loss the trace records.
  [[nodiscard]] virtual const Eigen::VectorXd& iterate() const = 0;
  /// Whether query_point() is iterate() (plain GD): the loss pass can then serve the gradient.
  [[nodiscard]] virtual bool queries_iterate() const = 0;
  /// One update with the gradient estimate at query_point().
  virtual void step(const Eigen::VectorXd& gradient) = 0;
};

/// x ← x − γ g. Illegal: γ ≤ 0.
class GradientDescent final : public Optimizer {
 public:
  GradientDescent(Eigen::VectorXd x0, double step);
  [[nodiscard]] std::string name() const override { return "gd"; }
  [[nodiscard]] const Eigen::VectorXd& query_point() const override { return x_; }
  [[nodiscard]] const Eigen::VectorXd& iterate() const override { return x_; }
  [[nodiscard]] bool queries_iterate() const override { return true; }
  void step(const Eigen::VectorXd& gradient) override;

 private:
  Eigen::VectorXd x_;
  double step_;
};

/// Nesterov's accelerated gradient (Nesterov 1983, the t/(t+3) form of Su, Boyd & Candès 2016):
///   x_{t+1} = y_t − γ g(y_t),  y_{t+1} = x_{t+1} + t/(t+3) · (x_{t+1} − x_t).
/// With a known PL/strong-convexity constant μ the constant momentum (1−√(μγ))/(1+√(μγ)) is used
/// instead. Illegal: γ ≤ 0, μ < 0.
class Nesterov final : public Optimizer {
 public:
  Nesterov(Eigen::VectorXd x0, double step, double mu = 0.0);
  [[nodiscard]] std::string name() const override { return "nesterov"; }
  [[nodiscard]] const Eigen::VectorXd& query_point() const override { return y_; }
  [[nodiscard]] const Eigen::VectorXd& iterate() const override { return x_; }
  [[nodiscard]] bool queries_iterate() const override { return false; }
  void step(const Eigen::VectorXd& gradient) override;

 private:
  Eigen::VectorXd x_;
  Eigen::VectorXd y_;
  Eigen::VectorXd previous_;
  double step_;
  double mu_;
  std::uint64_t t_ = 0;
};

}  // namespace stragglersim::sim
