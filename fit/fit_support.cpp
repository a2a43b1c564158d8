#include "fit/fit_support.h"

#include <Eigen/Cholesky>
#include <algorithm>
#include <atomic>
#include <boost/math/distributions/exponential.hpp>
#include <exception>
#include <optional>
#include <system_error>
#include <thread>

namespace stragglersim::sim {

/// sqrt(diag((−H)⁻¹)) of the log-likelihood at `x` by central differences; nullopt entries when
/// −H is not positive definite there (a boundary optimum).
std::vector<std::optional<double>> standard_errors(const LogLikelihood& ll,
                                                   const Eigen::VectorXd& x) {
  const Eigen::Index k = x.size();
  Eigen::VectorXd h(k);
  for (Eigen::Index i = 0; i < k; ++i) {
    h(i) = 1e-4 * std::max(std::abs(x(i)), 1e-3);
  }
  const double f0 = ll(x);
  Eigen::MatrixXd hessian(k, k);
  auto at = [&](Eigen::Index i, double si, Eigen::Index j, double sj) {
    Eigen::VectorXd y = x;
    y(i) += si * h(i);
    y(j) += sj * h(j);
    return ll(y);
  };
  for (Eigen::Index i = 0; i < k; ++i) {
    hessian(i, i) = (at(i, 1.0, i, 0.0) - 2.0 * f0 + at(i, -1.0, i, 0.0)) / (h(i) * h(i));
    for (Eigen::Index j = 0; j < i; ++j) {
      hessian(i, j) = (at(i, 1, j, 1) - at(i, 1, j, -1) - at(i, -1, j, 1) + at(i, -1, j, -1)) /
                      (4.0 * h(i) * h(j));
      hessian(j, i) = hessian(i, j);
    }
  }
  std::vector<std::optional<double>> out(static_cast<std::size_t>(k));
  const Eigen::LLT<Eigen::MatrixXd> llt(-hessian);
  if (llt.info() != Eigen::Success || !hessian.allFinite()) {
    return out;
  }
  const Eigen::MatrixXd covariance = llt.solve(Eigen::MatrixXd::Identity(k, k));
  for (Eigen::Index i = 0; i < k; ++i) {
    out[static_cast<std::size_t>(i)] = std::sqrt(covariance(i, i));
  }
  return out;
}

std::vector<double> sorted_copy(std::span<const double> times) {
  std::vector<double> s(times.begin(), times.end());
  if (!std::is_sorted(s.begin(), s.end())) {
    std::sort(s.begin(), s.end());
  }
  return s;
}

/// Every ((n − 1)/(m − 1))-th order statistic of `sorted` (the first and the last included), m =
/// `size`; all of `sorted` when it is no larger. A deterministic sample with the trace's
/// quantiles and its smallest time (the support of the shifted families).
std::vector<double> search_sample(const std::vector<double>& sorted, std::size_t size) {
  if (sorted.size() <= size) {
    return sorted;
  }
  std::vector<double> sample(size);
  const std::size_t last = sorted.size() - 1;
  for (std::size_t i = 0; i < size; ++i) {
    sample[i] = sorted[i * last / (size - 1)];
  }
  return sample;
}

/// Every worker's times in one sorted sample.
std::vector<double> sorted_pool(const std::vector<std::vector<double>>& sequences) {
  std::vector<double> pooled;
  for (const auto& s : sequences) {
    pooled.insert(pooled.end(), s.begin(), s.end());
  }
  std::sort(pooled.begin(), pooled.end());
  return pooled;
}

/// Fills log L, AIC and the KS test of a fitted family.
void finish(FamilyFit& fit,
            double log_likelihood,
            const std::vector<double>& sorted,
            const std::function<double(double)>& cdf) {
  fit.log_likelihood = log_likelihood;
  fit.aic = 2.0 * fit.parameter_count - 2.0 * log_likelihood;
  fit.ks = kolmogorov_smirnov(sorted, cdf);
}

FamilyFit unfitted(const std::string& family, std::string problem) {
  FamilyFit f;
  f.family = family;
  f.problem = std::move(problem);
  return f;
}

/// P(T ≤ t) of a shifted exponential (Boost.Math).
double shifted_exponential_cdf(double shift, double rate, double t) {
  return t <= shift ? 0.0 : cdf(boost::math::exponential_distribution<double>(rate), t - shift);
}

/// Runs every task once, on this thread and one more, each taking the next task not yet taken;
/// rethrows the exception of the first task (in order) that threw, after all have ended.
void run_on_two_threads(const std::vector<std::function<void()>>& tasks) {
  std::atomic<std::size_t> next{0};
  std::vector<std::exception_ptr> errors(tasks.size());
  const auto work = [&] {
    for (std::size_t i = next++; i < tasks.size(); i = next++) {
      try {
        tasks[i]();
      } catch (...) {
        errors[i] = std::current_exception();
      }
    }
  };
  std::optional<std::thread> helper;
  try {
    helper.emplace(work);
  } catch (const std::system_error&) {
    // No thread may start (EAGAIN): this thread takes every task, with the same results.
    helper.reset();
  }
  work();
  if (helper) {
    helper->join();
  }
  for (const auto& e : errors) {
    if (e) {
      std::rethrow_exception(e);
    }
  }
}

}  // namespace stragglersim::sim
