// The schemes `advise` compares (experiments/scheme_candidates.h, docs/advise.md "Candidates"):
// the lists for n workers, the proportional ones from the delay's factors or trace, those over a
// collective and the parameter server beside it, the candidates placed at a deadline, and the
// config each block makes.

#include "experiments/scheme_candidates.h"

#include <fmt/format.h>

#include <catch2/catch.hpp>
#include <limits>
#include <string>
#include <vector>

#include "experiments/config/run_plan.h"
#include "tests/test_paths.h"

namespace stragglersim::experiments {
namespace {

const std::filesystem::path kCandidateExamples =
    std::filesystem::path(stragglersim::testing::source_dir()) / "experiments" / "examples";

std::vector<std::string> candidates_test_labels(const std::vector<SchemeCandidate>& c) {
  std::vector<std::string> out;
  for (const auto& x : c) {
    out.push_back(x.label);
  }
  return out;
}

}  // namespace

TEST_CASE("advise: candidate schemes for n workers", "[advise]") {
  CHECK(candidates_test_labels(scheme_candidates(24, 1.5)) ==
        std::vector<std::string>{"uncoded",
                                 "ignore-stragglers r=18",
                                 "ignore-stragglers r=12",
                                 "exact frc d=2",
                                 "exact frc d=3",
                                 "crc s=1",
                                 "crc s=2",
                                 "multi_message frc d=2",
                                 "erasurehead frc d=2 r=6",
                                 "erasurehead frc d=2 r=12",
                                 "erasurehead frc d=2 r=18",
                                 "erasurehead frc d=3 r=6",
                                 "erasurehead frc d=3 r=12",
                                 "erasurehead frc d=3 r=18",
                                 "erasurehead frc d=2 deadline=1.5",
                                 "bgc d=2 r=12",
                                 "bgc d=3 r=12",
                                 "erasurehead frc d=2 adaptive r>=12",
                                 "erasurehead frc d=2 adaptive deadline",
                                 "erasurehead dynamic_frc d=2 r=12 K=2",
                                 "k-sync K=12",
                                 "k-async K=12",
                                 "anytime window=1.5",
                                 "rennala B=24",
                                 "malenia S=24",
                                 "ringmaster R=24",
                                 "mindflayer B=24 cutoff=1.5",
                                 "rescaled asgd"});
  // n = 5: no FRC (2, 3 do not divide 5), no deadline without a value.
  CHECK(candidates_test_labels(scheme_candidates(5, 0.0)) ==
        std::vector<std::string>{"uncoded",
                                 "ignore-stragglers r=4",
                                 "ignore-stragglers r=3",
                                 "crc s=1",
                                 "crc s=2",
                                 "bgc d=2 r=3",
                                 "bgc d=3 r=3",
                                 "k-sync K=3",
                                 "k-async K=3",
                                 "rennala B=5",
                                 "malenia S=5",
                                 "ringmaster R=5",
                                 "rescaled asgd"});
  const auto c = scheme_candidates(24, 0.0);
  const nlohmann::json config = {{"code", {{"kind", "frc"}}}, {"partitions", 24}};
  const nlohmann::json applied = apply_candidate(config, c[10]);
  CHECK(applied["code"] == nlohmann::json({{"kind", "frc"}, {"d", 2}}));
  CHECK(applied["stopping"] == nlohmann::json({{"rule", "first_r_or_decodable"}, {"r", 18}}));
  CHECK(applied["stragglers"] == "cancel");
  CHECK_FALSE(applied.contains("partitions"));
}

TEST_CASE("advise: proportional candidates come from the delay's per-worker factors or its trace",
          "[advise]") {
  const std::vector<double> factors = {1.0, 1.0, 2.0, 2.0, 1.0, 3.0};
  const nlohmann::json delay = {
      {"kind", "heterogeneous"}, {"shift", 0.5}, {"rate", 2.0}, {"factors", factors}};
  const auto c = proportional_candidates(6, delay);
  REQUIRE(candidates_test_labels(c) ==
          std::vector<std::string>{"exact proportional d=2 k=4n",
                                   "erasurehead proportional d=2 r=3 k=4n",
                                   "exact proportional_crc s=1 k=4n"});
  const nlohmann::json code = {{"kind", "proportional"}, {"d", 2}, {"factors", factors}};
  for (const auto& candidate : c) {
    CHECK(candidate.block["code"] ==
          (candidate.label.find("crc") == std::string::npos
               ? code
               : nlohmann::json({{"kind", "proportional_crc"}, {"s", 1}, {"factors", factors}})));
    CHECK(candidate.block["partitions"] == 24);
  }
  CHECK(c[0].block["stopping"] == nlohmann::json({{"rule", "decodable"}}));
  CHECK(c[1].block["stopping"] == nlohmann::json({{"rule", "first_r_or_decodable"}, {"r", 3}}));
  CHECK(c[2].block["stopping"] == nlohmann::json({{"rule", "decodable"}}));
  // The candidate's k replaces the config's.
  const nlohmann::json config = {{"code", {{"kind", "uncoded"}}}, {"partitions", 6}};
  CHECK(apply_candidate(config, c[0])["partitions"] == 24);
  // No factors (i.i.d. delays): none; an odd n (d = 2 does not divide it): the cyclic one only.
  CHECK(proportional_candidates(6, {{"kind", "shifted_exponential"}}).empty());
  CHECK(candidates_test_labels(proportional_candidates(5, delay)) ==
        std::vector<std::string>{"exact proportional_crc s=1 k=4n"});
  CHECK(proportional_candidates(2, delay).empty());
  // A replayed trace: the loads come from its per-worker means ("factors": "delay").
  const nlohmann::json trace = {{"kind", "trace"}, {"path", "t.csv"}, {"mode", "block"}};
  const auto t = proportional_candidates(6, trace);
  REQUIRE(t.size() == 3);
  CHECK(t[0].block["code"] ==
        nlohmann::json({{"kind", "proportional"}, {"d", 2}, {"factors", "delay"}}));
  CHECK(t[2].block["code"] ==
        nlohmann::json({{"kind", "proportional_crc"}, {"s", 1}, {"factors", "delay"}}));
  CHECK(proportional_candidates(5, trace).size() == 1);
}

TEST_CASE("advise: collective candidates over the config's all-reduce", "[advise][collectives]") {
  const nlohmann::json ring = {{"kind", "ring"}, {"latency", 0.001}, {"bandwidth", 1.0e6}};
  const nlohmann::json delay = {{"kind", "shifted_exponential"}, {"shift", 0.1}};
  CHECK(candidates_test_labels(collective_candidates(ring, 16, 0.0, delay)) ==
        std::vector<std::string>{"ring: uncoded",
                                 "ring: backup workers r=12",
                                 "ring: backup workers r=8",
                                 "ring: exact frc d=2",
                                 "ring: erasurehead frc d=2 r=8",
                                 "ring: erasurehead frc d=2 r=12"});
  const auto with_deadline = collective_candidates(ring, 12, 0.5, delay);
  CHECK(candidates_test_labels(with_deadline) ==
        std::vector<std::string>{"ring: uncoded",
                                 "ring: backup workers r=9",
                                 "ring: backup workers r=6",
                                 "ring: exact frc d=2",
                                 "ring: erasurehead frc d=2 r=6",
                                 "ring: erasurehead frc d=2 r=9",
                                 "ring: exact frc d=3",
                                 "ring: erasurehead frc d=3 r=6",
                                 "ring: bounded-time deadline=0.5",
                                 "ring: drop_compute m=4 threshold=0.5"});
  for (const auto& c : with_deadline) {
    INFO(c.label);
    CHECK(c.aggregation == "ring");
    CHECK(c.block["aggregation"] == ring);
  }
  const SchemeCandidate& backup = with_deadline[1];
  CHECK(backup.block["rescale"] == "empirical");
  CHECK(backup.block["stopping"] == nlohmann::json({{"rule", "first_r"}, {"r", 9}}));
  const SchemeCandidate& drop = with_deadline.back();
  CHECK(drop.block["partitions"] == 48);
  CHECK(drop.block["code"]["kind"] == "proportional");
  CHECK(drop.block["code"]["d"] == 1);
  CHECK(drop.block["stopping"] == nlohmann::json({{"rule", "drop_compute"}, {"threshold", 0.5}}));
  // StragglAR when the delay names one worker slowest (any n ≥ 3); not on a tie, not when the
  // config's all-reduce is StragglAR already.
  std::vector<double> factors(16, 1.0);
  factors[5] = 3.0;
  const nlohmann::json slow = {{"kind", "heterogeneous"}, {"factors", factors}};
  const auto named = collective_candidates(ring, 16, 0.0, slow);
  REQUIRE(named.back().label == "stragglar: uncoded straggler=5");
  CHECK(named.back().aggregation == "stragglar");
  CHECK(named.back().block["aggregation"] ==
        nlohmann::json(
            {{"kind", "stragglar"}, {"straggler", 5}, {"latency", 0.001}, {"bandwidth", 1.0e6}}));
  factors[9] = 3.0;
  CHECK(
      candidates_test_labels(collective_candidates(ring, 16, 0.0, {{"factors", factors}})).back() ==
      "ring: erasurehead frc d=2 r=12");
  std::vector<double> twelve(12, 1.0);
  twelve[2] = 2.0;
  CHECK(
      candidates_test_labels(collective_candidates(ring, 12, 0.0, {{"factors", twelve}})).back() ==
      "stragglar: uncoded straggler=2");
  nlohmann::json stragglar = ring;
  stragglar["kind"] = "stragglar";
  stragglar["straggler"] = 5;
  CHECK(candidates_test_labels(collective_candidates(stragglar, 16, 0.0, slow)).back() ==
        "stragglar: erasurehead frc d=2 r=12");
}

TEST_CASE("advise: beside a collective the parameter server runs on the collective's links",
          "[advise][collectives]") {
  const nlohmann::json hierarchical = {{"kind", "hierarchical"},
                                       {"latency", 0.005},
                                       {"bandwidth", 250000.0},
                                       {"node_size", 4},
                                       {"intra_latency", 0.0001}};
  SchemeCandidate c = scheme_candidates(16, 0.0).front();
  on_parameter_server(c, hierarchical);
  CHECK(c.label == "parameter_server: uncoded");
  CHECK(c.aggregation == "parameter_server");
  CHECK(c.block["aggregation"] == nlohmann::json({{"kind", "parameter_server"}}));
  CHECK(c.block["network"] == nlohmann::json({{"latency", 0.005}, {"bandwidth", 250000.0}}));
  // Every candidate of a collective config plans: the collective ones keep the block, the
  // parameter-server ones trade it for the network.
  auto config = read_json_file(kCandidateExamples / "collectives" / "hierarchical.json");
  config["target_loss"] = 0.3;
  std::vector<SchemeCandidate> all = scheme_candidates(16, 0.4);
  for (auto& p : all) {
    on_parameter_server(p, config["aggregation"]);
  }
  for (auto& x : collective_candidates(config["aggregation"], 16, 0.4, config["delay"])) {
    all.push_back(std::move(x));
  }
  for (const auto& x : all) {
    INFO(x.label);
    const nlohmann::json applied = apply_candidate(config, x);
    CHECK(applied["aggregation"] == x.block["aggregation"]);
    CHECK(applied.contains("network") == (x.aggregation == "parameter_server"));
    const RunPlan plan = plan_run(applied, "hierarchical.json", kCandidateExamples / "collectives");
    CHECK(plan.collective.has_value() == (x.aggregation != "parameter_server"));
    CHECK(plan.network.is_free() == plan.collective.has_value());
  }
}

TEST_CASE("advise: the deadline candidates wait as long as ErasureHead at half the workers",
          "[advise]") {
  // On the parameter server: τ = the anchor's iteration time, for the deadline, Anytime's window
  // and MindFlayer's cut-off; the other rows of scheme_candidates(n, τ) are not placed again.
  SchemeCandidate anchor;
  anchor.label = "erasurehead frc d=2 r=6";
  anchor.iteration_time = 0.8;
  const nlohmann::json iid = {{"kind", "shifted_exponential"}, {"shift", 0.1}};
  const auto placed = deadline_candidates({anchor}, 12, nlohmann::json(), iid);
  REQUIRE(candidates_test_labels(placed) ==
          std::vector<std::string>{"erasurehead frc d=2 deadline=0.8",
                                   "anytime window=0.8",
                                   "mindflayer B=12 cutoff=0.8"});
  CHECK(placed[0].block["stopping"] == nlohmann::json({{"rule", "deadline"}, {"after", 0.8}}));
  CHECK(placed[1].block["stopping"] == nlohmann::json({{"rule", "anytime"}, {"window", 0.8}}));
  CHECK(placed[2].block["stopping"]["cutoffs"] == 0.8);
  // An anchor that was not predicted, or another r: nothing to place.
  SchemeCandidate failed = anchor;
  failed.problem = "does not plan";
  CHECK(deadline_candidates({failed}, 12, nlohmann::json(), iid).empty());
  CHECK(deadline_candidates({anchor}, 10, nlohmann::json(), iid).empty());
  // Beside a collective: the parameter server's at the anchor over its links, the collective's
  // bounded-time and DropCompute at the mean stop E[t*] of the anchor over the ring (its
  // iteration time when E[t*] is not known); no StragglAR, even when the delay names a straggler.
  const nlohmann::json ring = {{"kind", "ring"}, {"latency", 0.001}, {"bandwidth", 1.0e6}};
  SchemeCandidate ps = anchor;
  on_parameter_server(ps, ring);
  SchemeCandidate over_ring = anchor;
  over_ring.label = "ring: erasurehead frc d=2 r=6";
  over_ring.iteration_time = 0.5;
  over_ring.stop_time = 0.3;
  std::vector<double> factors(12, 1.0);
  factors[4] = 3.0;
  const nlohmann::json slow = {{"kind", "heterogeneous"}, {"factors", factors}};
  const auto both = deadline_candidates({ps, over_ring}, 12, ring, slow);
  REQUIRE(candidates_test_labels(both) ==
          std::vector<std::string>{"parameter_server: erasurehead frc d=2 deadline=0.8",
                                   "parameter_server: anytime window=0.8",
                                   "parameter_server: mindflayer B=12 cutoff=0.8",
                                   "ring: bounded-time deadline=0.3",
                                   "ring: drop_compute m=4 threshold=0.3"});
  CHECK(both[0].block["network"] == nlohmann::json({{"latency", 0.001}, {"bandwidth", 1.0e6}}));
  CHECK(both[3].block["aggregation"] == ring);
  over_ring.stop_time = std::numeric_limits<double>::quiet_NaN();
  CHECK(candidates_test_labels(deadline_candidates({over_ring}, 12, ring, slow)) ==
        std::vector<std::string>{"ring: bounded-time deadline=0.5",
                                 "ring: drop_compute m=4 threshold=0.5"});
}

}  // namespace stragglersim::experiments
