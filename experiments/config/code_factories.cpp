// The code table (docs/plugins.md): one row per gradient code, its factory reading the code
// object into the code's Options, and what each code needs in memory before it is built.
#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "codes/bernoulli_gradient_code.h"
#include "codes/cyclic_mds_code.h"
#include "codes/cyclic_repetition_code.h"
#include "codes/dynamic_frc_code.h"
#include "codes/expander_graph_code.h"
#include "codes/fractional_repetition_code.h"
#include "codes/proportional_code.h"
#include "codes/proportional_cyclic_code.h"
#include "codes/stochastic_gradient_code.h"
#include "codes/uncoded_code.h"
#include "experiments/config/factories.h"
#include "experiments/config/factory_support.h"
#include "sim/delays/trace_delay.h"

namespace stragglersim::experiments {
namespace {

std::shared_ptr<const codes::GradientCode> make_uncoded(JsonReader& code,
                                                        const ClusterShape& shape) {
  const codes::UncodedCode::Options o{shape.workers, shape.partitions};
  if (shape.compact) {
    return std::make_shared<codes::UncodedCode>(checked(code, shape, o), codes::CompactTag{});
  }
  return std::make_shared<codes::UncodedCode>(checked(code, shape, o));
}

std::shared_ptr<const codes::GradientCode> make_frc(JsonReader& code, const ClusterShape& shape) {
  codes::FractionalRepetitionCode::Options o{shape.workers, shape.partitions};
  o.d = to_int(code.integer("d", std::nullopt));
  if (shape.compact) {
    return std::make_shared<codes::FractionalRepetitionCode>(checked(code, shape, o),
                                                             codes::CompactTag{});
  }
  return std::make_shared<codes::FractionalRepetitionCode>(checked(code, shape, o));
}

/// FRC whose groups are re-formed every "every" iterations (dynamic clustering).
std::shared_ptr<const codes::GradientCode> make_dynamic_frc(JsonReader& code,
                                                            const ClusterShape& shape) {
  codes::DynamicFrcCode::Options o{shape.workers, shape.partitions};
  o.d = to_int(code.integer("d", std::nullopt));
  o.every = to_int(code.integer("every", o.every));
  return std::make_shared<codes::DynamicFrcCode>(checked(code, shape, o));
}

std::shared_ptr<const codes::GradientCode> make_crc(JsonReader& code, const ClusterShape& shape) {
  codes::CyclicRepetitionCode::Options o{shape.workers, shape.partitions};
  o.s = to_int(code.integer("s", std::nullopt));
  o.seed = shape.seed;
  return std::make_shared<codes::CyclicRepetitionCode>(checked(code, shape, o));
}

std::shared_ptr<const codes::GradientCode> make_cyclic_mds(JsonReader& code,
                                                           const ClusterShape& shape) {
  codes::CyclicMdsCode::Options o{shape.workers, shape.partitions};
  o.s = to_int(code.integer("s", std::nullopt));
  return std::make_shared<codes::CyclicMdsCode>(checked(code, shape, o));
}

std::shared_ptr<const codes::GradientCode> make_bgc(JsonReader& code, const ClusterShape& shape) {
  codes::BernoulliGradientCode::Options o{shape.workers, shape.partitions};
  o.d = code.number("d", std::nullopt);
  o.seed = shape.seed;
  return std::make_shared<codes::BernoulliGradientCode>(checked(code, shape, o));
}

std::shared_ptr<const codes::GradientCode> make_expander(JsonReader& code,
                                                         const ClusterShape& shape) {
  codes::ExpanderGraphCode::Options o{shape.workers, shape.partitions_given ? shape.partitions : 0};
  o.d = to_int(code.integer("d", std::nullopt));
  o.seed = shape.seed;
  return std::make_shared<codes::ExpanderGraphCode>(checked(code, shape, o));
}

std::shared_ptr<const codes::GradientCode> make_sgc(JsonReader& code, const ClusterShape& shape) {
  codes::StochasticGradientCode::Options o{shape.workers, shape.partitions};
  o.d = to_int(code.integer("d", std::nullopt));
  o.seed = shape.seed;
  if (code.has("p")) {
    o.p = code.number("p", std::nullopt);
  }
  return std::make_shared<codes::StochasticGradientCode>(checked(code, shape, o));
}

/// The workers' slowdown factors estimated from the run's delay block (docs/model.md §5): its own
/// "factors" (heterogeneous, heterogeneous_markov), or for a trace each worker's mean time over
/// the fastest worker's. Fails at the code's "factors" when the delay has neither.
std::vector<double> delay_factors(JsonReader& code, const ClusterShape& shape) {
  const nlohmann::json& delay = shape.delay;
  const auto fail = [&](const std::string& why) {
    code.fail_value("factors",
                    why,
                    "delay",
                    "\"delay\" with a heterogeneous, heterogeneous_markov or trace delay, or an "
                    "array of one slowdown factor per worker");
  };
  if (!delay.is_object()) {
    fail("the run has no delay block to estimate the factors from");
  }
  if (delay.contains("factors") && delay["factors"].is_array()) {
    std::vector<double> factors;
    for (const auto& f : delay["factors"]) {
      factors.push_back(f.is_number() ? f.get<double>() : 0.0);  // the delay's own check names it
    }
    return factors;
  }
  if (delay.value("kind", "") != "trace" || !delay.contains("path") || !delay["path"].is_string()) {
    fail(fmt::format("the delay '{}' has no per-worker factors", delay.value("kind", "")));
  }
  const std::filesystem::path path = delay["path"].get<std::string>();
  sim::DelayTrace trace;
  try {
    trace = sim::read_delay_trace((path.is_absolute() ? path : shape.base_dir / path).string());
  } catch (const sim::TraceFileError& e) {
    fail(fmt::format("the delay's trace cannot be read ({})", e.what()));
  }
  std::vector<double> means;
  for (const auto& times : trace.per_worker) {
    double sum = 0.0;
    for (const double t : times) sum += t;
    means.push_back(sum / static_cast<double>(times.size()));
  }
  const double fastest = means.empty() ? 0.0 : *std::ranges::min_element(means);
  if (!(fastest > 0.0) || !std::isfinite(fastest)) {
    fail("the delay's trace has a worker with a mean time of 0 or a censored time");
  }
  for (double& m : means) m /= fastest;
  return means;
}

/// A heterogeneity-aware code's "factors": an array of one slowdown factor per worker (as a
/// heterogeneous delay's), or "delay" to estimate them from the run's delay.
std::vector<double> code_factors(JsonReader& code, const ClusterShape& shape) {
  const auto workers = static_cast<std::size_t>(std::max(shape.workers, 0));
  if (code.has("factors") && code.raw("factors").is_string()) {
    if (code.raw("factors") != "delay") {
      code.fail_value("factors",
                      "unknown value",
                      code.raw("factors"),
                      fmt::format("\"delay\", or an array of {} numbers > 0", workers));
    }
    return delay_factors(code, shape);
  }
  return read_factors(code, workers);
}

/// Heterogeneity-aware FRC: "d" and the workers' slowdown "factors" (code_factors).
std::shared_ptr<const codes::GradientCode> make_proportional(JsonReader& code,
                                                             const ClusterShape& shape) {
  codes::ProportionalCode::Options o;
  o.workers = shape.workers;
  o.partitions = shape.partitions;
  o.d = to_int(code.integer("d", std::nullopt));
  o.factors = code_factors(code, shape);
  return std::make_shared<codes::ProportionalCode>(checked(code, shape, o));
}

/// Heterogeneity-aware cyclic code: "s" and the workers' "factors", as `proportional`'s.
std::shared_ptr<const codes::GradientCode> make_proportional_crc(JsonReader& code,
                                                                 const ClusterShape& shape) {
  // Braced: the keys are read in this order (s, then factors).
  const codes::ProportionalCyclicCode::Options o{.workers = shape.workers,
                                                 .partitions = shape.partitions,
                                                 .s = to_int(code.integer("s", std::nullopt)),
                                                 .factors = code_factors(code, shape),
                                                 .seed = shape.seed};
  return std::make_shared<codes::ProportionalCyclicCode>(checked(code, shape, o));
}

}  // namespace

namespace {

/// Per-worker delay, arrival and load vectors of the simulation: about 16 doubles per worker.
double per_worker_bytes(double workers) { return 128.0 * workers; }

/// Codes kept as supports (d partitions per worker), with a dense B only when n·k ≤ 2^24.
CodeFootprint support_footprint(double workers, double partitions, double d) {
  const double dense = workers * partitions <= 0x1p24 ? 8.0 * workers * partitions : 0.0;
  return {per_worker_bytes(workers) + 64.0 * partitions + 16.0 * workers * std::max(d, 1.0) + dense,
          partitions,
          ""};
}

/// B (n × k doubles), and a decode's B_Kᵀ and its decomposition of the same size.
CodeFootprint dense_footprint(double workers, double partitions) {
  return {per_worker_bytes(workers) + 3.0 * 8.0 * workers * partitions, partitions, ""};
}

}  // namespace

CodeFootprint code_footprint(
    std::string_view kind, double workers, double partitions, double d, bool compact) {
  // The one place that knows each code's storage: keyed by the factory row's name.
  if ((kind == "uncoded" || kind == "frc") && compact) {
    return {0.0, partitions, ""};  // GradientCode::Compact: a few integers
  }
  if (kind == "uncoded" || kind == "frc" || kind == "dynamic_frc") {
    return support_footprint(workers, partitions, d);
  }
  if (kind == "expander" && d > 0.0) {
    CodeFootprint f = dense_footprint(workers, 2.0 * workers / d);
    f.partitions_formula = "2·workers/d";
    return f;
  }
  return dense_footprint(workers, partitions);
}

namespace {

/// Dynamic clustering permutes which worker plays each code position, which only the injected
/// delays can follow (a measured worker is its rank), and a fault names a worker, not a position.
Requirements regrouping() {
  const std::string accepted = "\"inject\": true and no faults, or a code with fixed groups";
  return {
      .injected_delays = Flag{{.problem = "regroups the workers by their injected delays",
                               .accepted = accepted,
                               .at = ReportAt::kConflict}},
      .no_faults = Flag{{.problem = "moves the workers between code positions; a fault names a "
                                    "worker",
                         .accepted = accepted,
                         .at = ReportAt::kConflict}},
  };
}

}  // namespace

const std::vector<FactoryRow<CodeFactory>>& code_factories() {
  static const std::vector<FactoryRow<CodeFactory>> table = {
      {"bgc",
       "Bernoulli gradient code: worker i holds partition j with probability d/k (one-step "
       "decoder)",
       {{"d", ""}},
       make_bgc},
      {"crc",
       "cyclic repetition code: worker i holds partitions i..i+s, exact from any n - s workers",
       {{"s", ""}},
       make_crc},
      {"cyclic_mds",
       "real cyclic MDS code of redundancy s (>= s when needed), exact from any n - s workers",
       {{"s", ""}},
       make_cyclic_mds},
      {"dynamic_frc",
       "FRC with dynamic clustering: every K iterations the groups are re-formed so that the "
       "workers late in those K iterations fall in different groups (data movement free)",
       {{"d", ""}, {"every", "10"}},
       make_dynamic_frc,
       regrouping()},
      {"expander",
       "expander graph code: workers are the edges of a random d-regular graph on k = 2n/d "
       "partitions",
       {{"d", ""}},
       make_expander},
      {"frc",
       "fractional repetition code: n/d groups of d workers holding the same d partitions",
       {{"d", ""}},
       make_frc},
      {"proportional",
       "heterogeneity-aware FRC: groups of d workers of similar speed, each group holding "
       "partitions in proportion to its speed (1/factor); factors \"delay\": the run's delay's "
       "own, or a trace's mean time per worker over the fastest's",
       {{"d", ""}, {"factors", ""}},
       make_proportional},
      {"proportional_crc",
       "heterogeneity-aware cyclic code: each worker holds partitions in proportion to its speed "
       "(1/factor), laid cyclically so that each is held by s + 1 workers; exact from any n - s "
       "workers; factors as proportional's",
       {{"s", ""}, {"factors", ""}},
       make_proportional_crc},
      {"sgc",
       "stochastic gradient code: d partitions per worker, balanced random assignment "
       "(one-step decoder, optional straggle probability p)",
       {{"d", ""}, {"p", ""}},
       make_sgc},
      {"uncoded", "one partition per worker, no redundancy", {}, make_uncoded},
  };
  return table;
}

}  // namespace stragglersim::experiments
