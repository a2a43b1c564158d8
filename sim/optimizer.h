#pragma once
// First-order optimisers driven by the master with the decoded gradient estimate
// ĝ + λ₂·y (the regulariser's gradient added exactly, docs/model.md).

#include <Eigen/Core>
#include <cstdint>
#include <memory>
#include <string>

namespace stragglersim::sim {

/// The step size γ_t of update t = 0, 1, … (docs/model.md §2 "Step schedules"), from the base
/// step γ:
///   constant   γ_t = γ
///   inverse_t  γ_t = γ / (1 + t/h)                       (h: half_life, γ halves at t = h)
///   cosine     γ_t = γ·(f + (1 − f)·(1 + cos(π·min(t, T)/T))/2)   (T: horizon, f: floor)
struct StepSchedule {
  enum class Kind { kConstant, kInverseT, kCosine };
  Kind kind = Kind::kConstant;
  double half_life = 0.0;     ///< inverse_t: h > 0
  double floor = 0.0;         ///< cosine: f in [0, 1], the fraction of γ at t = T
  std::uint64_t horizon = 0;  ///< cosine: T ≥ 1 (the run's iterations)
  /// γ_t for the base step γ. Illegal: a schedule whose parameters are out of range.
  [[nodiscard]] double at(double step, std::uint64_t t) const;
  [[nodiscard]] bool constant() const { return kind == Kind::kConstant; }
  [[nodiscard]] std::string name() const;
};

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

/// x ← x − γ_t g, or with heavy-ball momentum m > 0 (the form of PyTorch's SGD):
///   v ← m·v + g,  x ← x − γ_t v   (v₀ = 0).
/// m = 0 with the constant schedule is plain GD, to the bit. Illegal: γ ≤ 0, m ∉ [0, 1).
class GradientDescent final : public Optimizer {
 public:
  GradientDescent(Eigen::VectorXd x0,
                  double step,
                  StepSchedule schedule = {},
                  double momentum = 0.0);
  [[nodiscard]] std::string name() const override { return "gd"; }
  [[nodiscard]] const Eigen::VectorXd& query_point() const override { return x_; }
  [[nodiscard]] const Eigen::VectorXd& iterate() const override { return x_; }
  [[nodiscard]] bool queries_iterate() const override { return true; }
  void step(const Eigen::VectorXd& gradient) override;

 private:
  Eigen::VectorXd x_;
  Eigen::VectorXd velocity_;
  double step_;
  StepSchedule schedule_;
  double momentum_;
  std::uint64_t t_ = 0;
};

/// Nesterov's accelerated gradient (Nesterov 1983, the t/(t+3) form of Su, Boyd & Candès 2016):
///   x_{t+1} = y_t − γ g(y_t),  y_{t+1} = x_{t+1} + t/(t+3) · (x_{t+1} − x_t).
/// With a known PL/strong-convexity constant μ the constant momentum (1−√(μγ))/(1+√(μγ)) is used
/// instead. A schedule replaces γ by γ_t in the gradient step. Illegal: γ ≤ 0, μ < 0.
class Nesterov final : public Optimizer {
 public:
  Nesterov(Eigen::VectorXd x0, double step, double mu = 0.0, StepSchedule schedule = {});
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
  StepSchedule schedule_;
  std::uint64_t t_ = 0;
};

/// The accelerated gradient of ErasureHead's reference implementation (Wang, Charles and
/// Papailiopoulos 2019, their `AGD` update rule), kept as they wrote it: with θ_t = 2/(t + 2),
///   y = (1 − θ_t)·x_t + θ_t·u_t,  x_{t+1} = y − γ_t·g(x_t),  u_{t+1} = x_t + (x_{t+1} − x_t)/θ_t,
/// u₀ = 0, and the gradient (the regulariser's included) taken at the iterate x_t, not at y.
/// Illegal: γ ≤ 0.
class ReferenceAgd final : public Optimizer {
 public:
  ReferenceAgd(Eigen::VectorXd x0, double step, StepSchedule schedule = {});
  [[nodiscard]] std::string name() const override { return "erasurehead_agd"; }
  [[nodiscard]] const Eigen::VectorXd& query_point() const override { return x_; }
  [[nodiscard]] const Eigen::VectorXd& iterate() const override { return x_; }
  [[nodiscard]] bool queries_iterate() const override { return true; }
  void step(const Eigen::VectorXd& gradient) override;

 private:
  Eigen::VectorXd x_;
  Eigen::VectorXd u_;
  double step_;
  StepSchedule schedule_;
  std::uint64_t t_ = 0;
};

}  // namespace stragglersim::sim
