// End-to-end tests of the stragglersim executable: exit statuses, outputs, determinism.

#include "experiments/cli/cli.h"

#include <fmt/format.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <boost/version.hpp>
#include <catch2/catch.hpp>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <regex>
#include <sstream>
#include <string>

#include "tests/test_support.h"

namespace {

namespace fs = std::filesystem;
using stragglersim::testing::slurp;
using Result = stragglersim::testing::CommandResult;

fs::path scratch(const std::string& name) {
  return stragglersim::testing::scratch_dir("cli_test", name);
}

Result run(const std::string& args, const fs::path& dir) {
  return stragglersim::testing::run_stragglersim(args, dir);
}

/// `stragglersim run CFG --out OUT` in `dir`.
Result run_config(const fs::path& cfg, const fs::path& out, const fs::path& dir) {
  return run(fmt::format("run '{}' --out '{}'", cfg.string(), out.string()), dir);
}

nlohmann::json config() { return stragglersim::testing::small_least_squares_config(); }

nlohmann::json seeded_config(int seed) {
  auto c = config();
  c["seed"] = seed;
  return c;
}

fs::path write_config(const fs::path& dir,
                      const nlohmann::json& c,
                      const std::string& name = "cfg.json") {
  const auto p = dir / name;
  std::ofstream(p) << c.dump(2);
  return p;
}

/// A fresh scratch folder `name` and `c` written there as cfg.json.
std::pair<fs::path, fs::path> scratch_config(const std::string& name, const nlohmann::json& c) {
  const auto dir = scratch(name);
  return {dir, write_config(dir, c)};
}

}  // namespace

TEST_CASE("cli: run writes trace.csv and summary.json", "[experiments][cli]") {
  const auto [dir, cfg] = scratch_config("run", config());
  const Result r = run_config(cfg, dir / "out", dir);
  REQUIRE(r.status == 0);
  const std::string trace = slurp(dir / "out" / "trace.csv");
  CHECK(trace.rfind("iteration,time,iteration_time,loss,grad_norm,decoding_error,gradient_error,"
                    "gradient_error_relative,workers_heard,"
                    "partitions_covered,test_loss,test_metric\n0,0,0,",
                    0) == 0);
  CHECK(std::count(trace.begin(), trace.end(), '\n') == 32);
  const auto summary = nlohmann::json::parse(slurp(dir / "out" / "summary.json"));
  CHECK(summary["status"] == "ok");
  CHECK(summary["seed"] == 3);
  CHECK(summary["config"]["stragglers"] == "cancel");
  CHECK(summary["build"].contains("git_revision"));
  // The Boost the binary was built with: BOOST_LIB_VERSION ("1_74") of the same headers, then
  // the patch number.
  std::string boost_lib = BOOST_LIB_VERSION;
  std::replace(boost_lib.begin(), boost_lib.end(), '_', '.');
  const std::string boost = summary["build"]["boost"];
  CHECK(std::regex_match(boost, std::regex(R"(\d+\.\d+\.\d+)")));
  CHECK(boost.rfind(boost_lib + ".", 0) == 0);
  // The measured phases: the run command times its plan; the others lie within the run's
  // wall_clock_seconds, which they split.
  CHECK(summary["plan_seconds"].get<double>() >= 0.0);
  // The bytes its passes read: at least the trace rows' f(x_t), each a pass over the 400 × 6
  // dense training rows and their labels (no test set).
  CHECK(summary["data_bytes_read"].get<std::int64_t>() >= 31 * 400 * (6 + 1) * 8);
  double phases = 0.0;
  for (const char* key :
       {"f_star_seconds", "predictions_seconds", "iterations_seconds", "writing_seconds"}) {
    INFO(key);
    CHECK(summary[key].get<double>() >= 0.0);
    phases += summary[key].get<double>();
  }
  CHECK(phases <= summary["wall_clock_seconds"].get<double>());
  // Nothing but the three outputs is left behind (temporary names are renamed away).
  std::vector<std::string> files;
  for (const auto& e : fs::directory_iterator(dir / "out")) {
    files.push_back(e.path().filename().string());
  }
  std::sort(files.begin(), files.end());
  CHECK(files == std::vector<std::string>{"summary.json", "trace.csv", "workers.csv"});
}

TEST_CASE("cli: run's last line gives simulated and real seconds on the threads backend",
          "[experiments][cli]") {
  const auto dir = scratch("run_line");
  auto c = config();
  c["optimizer"]["iterations"] = 5;
  c["backend"] = {{"kind", "threads"}, {"seconds_per_unit", 0.001}};
  const auto cfg = write_config(dir, c);
  const Result r = run_config(cfg, dir / "out", dir);
  REQUIRE(r.status == 0);
  const auto summary = nlohmann::json::parse(slurp(dir / "out" / "summary.json"));
  // The line prints both totals of summary.json with 6 significant digits.
  CHECK_THAT(r.out,
             Catch::Matchers::StartsWith(
                 fmt::format("{}: 5 iterations in {:.6g} simulated s ({:.6g} real s), final loss ",
                             summary["name"].get<std::string>(),
                             summary["total_time"].get<double>(),
                             summary["total_real_time"].get<double>())));
  // The simulated backend prints the simulated seconds alone.
  c.erase("backend");
  const auto simulated = write_config(dir, c);
  const Result s = run_config(simulated, dir / "sim", dir);
  REQUIRE(s.status == 0);
  CHECK(s.out.find(" simulated s, final loss ") != std::string::npos);
  CHECK(s.out.find("real s") == std::string::npos);
}

TEST_CASE("cli: summary records the git revision of the build", "[experiments][cli]") {
  // Taken at build time (tools/git_revision.cmake): after a commit, a rebuild records the
  // new HEAD without a reconfigure. The test binary is built with the executable, so HEAD now
  // is HEAD at that build unless someone committed since.
  const auto [dir, cfg] = scratch_config("revision", config());
  REQUIRE(run_config(cfg, dir / "out", dir).status == 0);
  const auto summary = nlohmann::json::parse(slurp(dir / "out" / "summary.json"));
  const std::string recorded = summary["build"]["git_revision"];
  const auto head = dir / "head.txt";
  const int status = stragglersim::testing::exit_status(
      std::system(fmt::format("git -C '{}' rev-parse --short=12 HEAD > '{}' 2> /dev/null",
                              stragglersim::testing::source_dir(),
                              head.string())
                      .c_str()));
  if (status != 0) {
    // Not a git checkout (a source archive): the build says so.
    CHECK(recorded == "unknown");
    return;
  }
  std::string expected = slurp(head);
  expected.erase(expected.find_last_not_of('\n') + 1);
  INFO("a commit after the last build makes the binaries stale: rebuild, then rerun");
  CHECK(recorded == expected);
  const Result version = run("--version", dir);
  CHECK(version.out.find("(" + expected + ")") != std::string::npos);
}

TEST_CASE("cli: same seed gives the same bytes and another seed other times",
          "[experiments][cli]") {
  const auto [dir, cfg] = scratch_config("determinism", config());
  const auto cfg2 = write_config(dir, seeded_config(4), "cfg2.json");
  REQUIRE(run_config(cfg, dir / "a", dir).status == 0);
  REQUIRE(run_config(cfg, dir / "b", dir).status == 0);
  REQUIRE(run_config(cfg2, dir / "c", dir).status == 0);
  const std::string a = slurp(dir / "a" / "trace.csv");
  CHECK(a == slurp(dir / "b" / "trace.csv"));
  CHECK(a != slurp(dir / "c" / "trace.csv"));
  // The seed changes the data too; the delays alone must differ: compare the time column.
  auto times = [](const std::string& csv) {
    std::vector<std::string> out;
    std::stringstream s(csv);
    std::string line;
    std::getline(s, line);
    while (std::getline(s, line)) {
      const auto first = line.find(',');
      out.push_back(line.substr(first + 1, line.find(',', first + 1) - first - 1));
    }
    return out;
  };
  CHECK(times(a) != times(slurp(dir / "c" / "trace.csv")));
}

TEST_CASE("cli: bad input exits 2 with the message and leaves no output", "[experiments][cli]") {
  const auto dir = scratch("bad");
  auto c = config();
  c["code"]["d"] = 3;
  const auto cfg = write_config(dir, c);
  const auto out = dir / "out";
  const Result r = run_config(cfg, out, dir);
  CHECK(r.status == 2);
  CHECK(r.err == fmt::format("error: {}:/code/d: replication must divide the workers; got 3; "
                             "expected a divisor of workers = 8\n",
                             cfg.string()));
  CHECK_FALSE(fs::exists(out));

  const auto broken = dir / "broken.json";
  std::ofstream(broken) << "{\"workers\": 8,";
  const Result b = run_config(broken, out, dir);
  CHECK(b.status == 2);
  CHECK(b.err.rfind(fmt::format("error: {}:1:15: invalid JSON:", broken.string()), 0) == 0);
  CHECK_FALSE(fs::exists(out));

  const Result missing = run_config(dir / "nope.json", out, dir);
  CHECK(missing.status == 2);
  CHECK(missing.err ==
        fmt::format("error: {}: cannot open config file\n", (dir / "nope.json").string()));

  const Result usage = run("run", dir);
  CHECK(usage.status == 2);
  CHECK_FALSE(fs::exists(out));
}

TEST_CASE("cli: a diverging run exits 3 and its trace holds only finite rows",
          "[experiments][cli]") {
  const auto dir = scratch("diverge");
  auto c = config();
  c["optimizer"]["step"] = 50.0;
  c["optimizer"]["iterations"] = 3000;
  const auto cfg = write_config(dir, c);
  const Result r = run_config(cfg, dir / "out", dir);
  CHECK(r.status == 3);
  CHECK(r.err.find("non-finite loss") != std::string::npos);
  const std::string trace = slurp(dir / "out" / "trace.csv");
  CHECK(trace.find("nan") == std::string::npos);
  CHECK(trace.find("inf") == std::string::npos);
  const auto summary = nlohmann::json::parse(slurp(dir / "out" / "summary.json"));
  CHECK(summary["status"] == "failed");
}

TEST_CASE("cli: delay-only runs with a million workers", "[experiments][cli]") {
  const auto dir = scratch("delay_only");
  const Result r =
      run(fmt::format("run '{}/experiments/examples/delay_only_million.json' --out '{}'",
                      stragglersim::testing::source_dir(),
                      (dir / "out").string()),
          dir);
  REQUIRE(r.status == 0);
  const auto summary = nlohmann::json::parse(slurp(dir / "out" / "summary.json"));
  CHECK(summary["iterations"] == 200);
  CHECK(summary["fast_path"] == true);
  // ErasureHead, d = 2, r = n/2, Model A: 2(1 + H_n − H_{n/2}) → 2(1 + ln 2) as n grows.
  CHECK(summary["mean_iteration_time"].get<double>() ==
        Approx(2.0 * (1.0 + std::log(2.0)))
            .margin(4.0 * summary["iteration_time_standard_error"].get<double>() + 1e-6));
}

TEST_CASE("cli: --version and --help", "[experiments][cli]") {
  const auto dir = scratch("version");
  const Result v = run("--version", dir);
  CHECK(v.status == 0);
  CHECK(v.out.rfind("stragglersim 0.1.0", 0) == 0);
  const Result h = run("run --help", dir);
  CHECK(h.status == 0);
  CHECK(h.out.find("--out") != std::string::npos);
}

TEST_CASE("cli: run refuses an --out folder holding another run unless --force",
          "[experiments][cli]") {
  const auto [dir, cfg] = scratch_config("force", config());
  const auto cfg2 = write_config(dir, seeded_config(4), "other.json");
  const auto out = dir / "out";
  REQUIRE(run_config(cfg, out, dir).status == 0);
  const std::string trace = slurp(out / "trace.csv");
  // The same config again is the same run: allowed, same bytes (but the measured wall clock).
  const std::string first_summary = slurp(out / "summary.json");
  REQUIRE(run_config(cfg, out, dir).status == 0);
  CHECK(slurp(out / "trace.csv") == trace);
  const std::string summary = slurp(out / "summary.json");
  CHECK(stragglersim::testing::mask_wall_clock(summary) ==
        stragglersim::testing::mask_wall_clock(first_summary));

  const Result refused = run_config(cfg2, out, dir);
  CHECK(refused.status == 2);
  CHECK(refused.err ==
        fmt::format("error: {}: holds another run; got run \"cfg\" (summary.json of another "
                    "config); expected an empty or new --out folder, or --force to replace its "
                    "trace.csv and summary.json\n",
                    out.string()));
  CHECK(slurp(out / "trace.csv") == trace);
  CHECK(slurp(out / "summary.json") == summary);

  const Result forced =
      run(fmt::format("run '{}' --out '{}' --force", cfg2.string(), out.string()), dir);
  CHECK(forced.status == 0);
  CHECK(slurp(out / "trace.csv") != trace);
  CHECK(nlohmann::json::parse(slurp(out / "summary.json"))["seed"] == 4);
  REQUIRE(fs::exists(out / "workers.csv"));

  // A delay-only run forced over it leaves none of the training run's files behind.
  auto delays = seeded_config(5);
  delays["data"] = nullptr;
  delays.erase("loss");
  delays["optimizer"] = {{"iterations", 10}};
  const auto cfg3 = write_config(dir, delays, "delays.json");
  const Result delay_only =
      run(fmt::format("run '{}' --out '{}' --force", cfg3.string(), out.string()), dir);
  CHECK(delay_only.status == 0);
  CHECK_FALSE(fs::exists(out / "workers.csv"));
  CHECK(fs::exists(out / "trace.csv"));

  // A trace without summary (an unfinished run) cannot be told apart: refused too.
  fs::remove(out / "summary.json");
  CHECK(run_config(cfg, out, dir).status == 2);
}

TEST_CASE("cli: an unknown command names the nearest one", "[experiments][cli]") {
  const auto dir = scratch("unknown_command");
  const Result typo = run("runn x.json", dir);
  CHECK(typo.status == 2);
  CHECK(typo.err ==
        "error: unknown command 'runn'; did you mean 'run'? valid commands are: advise, check, "
        "codes, fit, init, list, run, sweep, theory, trace, validate, whatif\n");
  CHECK(typo.out.empty());
  const Result swap = run("thoery", dir);
  CHECK(swap.err ==
        "error: unknown command 'thoery'; did you mean 'theory'? valid commands are: advise, "
        "check, codes, fit, init, list, run, sweep, theory, trace, validate, whatif\n");
  const Result far = run("simulate", dir);
  CHECK(far.status == 2);
  CHECK(far.err ==
        "error: unknown command 'simulate'; valid commands are: advise, check, codes, fit, init, "
        "list, run, sweep, theory, trace, validate, whatif\n");
}

TEST_CASE("cli: --help shows defaults and points to the docs", "[experiments][cli]") {
  const auto dir = scratch("help");
  const Result top = run("--help", dir);
  CHECK(top.status == 0);
  CHECK(top.out.find("docs/model.md") != std::string::npos);
  const Result codes = run("codes --help", dir);
  CHECK(codes.status == 0);
  // CLI11 prints a captured default after the type; required options show none.
  CHECK(codes.out.find("--samples INT:INT in [1 - 10000000]=200") != std::string::npos);
  CHECK(codes.out.find("--seed UINT=1 ") != std::string::npos);
  CHECK(codes.out.find("--workers INT:INT in [1 - 100000] REQUIRED") != std::string::npos);
  CHECK(codes.out.find("docs/model.md") != std::string::npos);
}

TEST_CASE("cli: codes names the accepted range of --wait-for and --stragglers",
          "[experiments][cli]") {
  const auto dir = scratch("codes_range");
  const Result w = run(R"(codes --workers 10 --code '{"kind": "frc", "d": 2}' --wait-for 13)", dir);
  CHECK(w.status == 2);
  CHECK(w.err ==
        "error: <command line>: --wait-for out of range; got 13; expected an integer in [1, 10] "
        "(at most --workers = 10)\n");
  const Result s =
      run(R"(codes --workers 10 --code '{"kind": "frc", "d": 2}' --stragglers 11)", dir);
  CHECK(s.status == 2);
  CHECK(s.err ==
        "error: <command line>: --stragglers out of range; got 11; expected an integer in [0, 10] "
        "(at most --workers = 10)\n");
}

TEST_CASE("cli: the codes table shows only the refusal count of a decoder that refused all",
          "[experiments][cli]") {
  const auto dir = scratch("codes_refused");
  // CRC with s = 2 and 3 stragglers: the exact decoder refuses each of the C(8, 3) = 56 patterns.
  const Result r = run(R"(codes --workers 8 --code '{"kind": "crc", "s": 2}' --wait-for 5)", dir);
  REQUIRE(r.status == 0);
  std::istringstream lines(r.out);
  std::string line;
  std::string exact_row;
  while (std::getline(lines, line)) {
    if (line.rfind("exact    ", 0) == 0) {  // the table row, not the refusal line
      exact_row = line;
    }
  }
  CHECK(exact_row == "exact            56         0 refused all 56 patterns");
  CHECK(r.out.find("exact decoder refused 56 of 56 patterns; first: ") != std::string::npos);
}

TEST_CASE("cli: the unknown-key list names target_loss and backend", "[experiments][cli]") {
  const auto dir = scratch("unknown_key");
  auto c = config();
  c["targetloss"] = 0.1;
  const auto cfg = write_config(dir, c);
  const Result r = run_config(cfg, dir / "o", dir);
  CHECK(r.status == 2);
  CHECK(r.err == fmt::format("error: {}:/targetloss: unknown key 'targetloss'; did you mean "
                             "'target_loss'? valid keys are: aggregation, backend, code, data, "
                             "data_seed, "
                             "delay, divergence_bound, loss, name, network, optimizer, "
                             "partitions, rescale, "
                             "sampler, seed, stopping, stragglers, target_loss, threads, workers\n",
                             cfg.string()));
}

TEST_CASE("cli: unusable output files and folders exit 2 before any compute",
          "[experiments][cli]") {
  const auto [dir, cfg] = scratch_config("out_files", config());
  const auto file = dir / "file.txt";
  std::ofstream(file) << "x";
  const std::string code = R"(--workers 4 --code '{"kind": "frc", "d": 2}')";
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"codes " + code + " --csv '" + dir.string() + "'",
       "--csv: is a folder; got \"" + dir.string() + "\"; expected a file name"},
      {"codes " + code + " --csv '" + (file / "b.csv").string() + "'",
       "--csv: " + file.string() + " is not a folder; got \"" + (file / "b.csv").string() +
           "\"; expected a file in an existing folder"},
      {"theory '" + cfg.string() + "' --measure 2 --csv '" + dir.string() + "'",
       "--csv: is a folder; got \"" + dir.string() + "\"; expected a file name"},
      {"check --quick --out '" + file.string() + "'",
       "--out: exists and is not a folder; got \"" + file.string() +
           "\"; expected a new or existing folder"},
  };
  for (const auto& [args, message] : cases) {
    INFO(args);
    const Result r = run(args, dir);
    CHECK(r.status == 2);
    CHECK(r.err == "error: " + message + "\n");
  }
  const auto sweep = dir / "sweep.json";
  std::ofstream(sweep) << nlohmann::json{{"base", config()}, {"grid", {{"/seed", {1, 2}}}}}.dump();
  const Result s = run(fmt::format("sweep '{}' --out '{}'", sweep.string(), file.string()), dir);
  CHECK(s.status == 2);
  CHECK(s.err ==
        "error: --out: exists and is "
        "not a folder; got \"" +
            file.string() + "\"; expected a new or existing folder\n");
  CHECK(slurp(file) == "x");
  if (::geteuid() != 0) {  // root writes anywhere: a read-only folder refuses only other users
    const auto locked = dir / "locked";
    fs::create_directories(locked);
    fs::permissions(locked, fs::perms::owner_read | fs::perms::owner_exec);
    const Result ro = run_config(cfg, locked / "o", dir);
    fs::permissions(locked, fs::perms::owner_all);
    CHECK(ro.status == 2);
    CHECK(ro.err == "error: --out: " + locked.string() +
                        " is not writable (Permission denied); got \"" + (locked / "o").string() +
                        "\"; expected a folder this user may write\n");
  }
}

namespace {

/// A delay-only config whose deadline (0.01 s) comes before any worker (shift 1 s): every
/// iteration hears nobody, so every run warns no_worker_heard.
nlohmann::json silent_config() {
  return {{"name", "silent"},
          {"workers", 4},
          {"data", nullptr},
          {"code", {{"kind", "uncoded"}}},
          {"stopping", {{"rule", "deadline"}, {"after", 0.01}}},
          {"delay", {{"kind", "shifted_exponential"}, {"shift", 1.0}, {"rate", 1.0}}},
          {"optimizer", {{"iterations", 5}}}};
}

}  // namespace

TEST_CASE("cli: --quiet prints nothing but errors and -o is --out", "[experiments][cli][quiet]") {
  const auto [dir, cfg] = scratch_config("quiet", silent_config());
  const Result loud = run_config(cfg, dir / "a", dir);
  REQUIRE(loud.status == 0);
  CHECK(loud.err.find("warning: no_worker_heard: ") != std::string::npos);
  CHECK(loud.out.find("wrote ") != std::string::npos);
  const Result quiet =
      run(fmt::format("run '{}' -o '{}' --quiet", cfg.string(), (dir / "b").string()), dir);
  REQUIRE(quiet.status == 0);
  CHECK(quiet.out.empty());
  CHECK(quiet.err.empty());
  // -o wrote the same trace as --out.
  CHECK(slurp(dir / "a" / "trace.csv") == slurp(dir / "b" / "trace.csv"));
  const Result theory = run(fmt::format("theory '{}' -q --json", cfg.string()), dir);
  CHECK(theory.status == 0);
  CHECK(theory.err.empty());
  CHECK(nlohmann::json::parse(theory.out).contains("expected_iteration_time"));
  // Errors are still printed.
  auto bad = silent_config();
  bad["worker"] = 4;
  const auto bad_cfg = write_config(dir, bad, "bad.json");
  const Result error =
      run(fmt::format("run '{}' -o '{}' --quiet", bad_cfg.string(), (dir / "c").string()), dir);
  CHECK(error.status == 2);
  CHECK(
      error.err.find(":/worker: unknown key 'worker'; did you mean 'workers'? valid keys are: ") !=
      std::string::npos);
}

TEST_CASE("cli: a sweep prints each warning once with its count of runs",
          "[experiments][cli][quiet]") {
  const auto dir = scratch("sweep_warnings");
  const nlohmann::json sweep = {
      {"name", "silent"}, {"base", silent_config()}, {"grid", {{"/workers", {4, 6, 8}}}}};
  std::ofstream(dir / "s.json") << sweep.dump(2);
  const Result r = run(
      fmt::format("sweep '{}' -o '{}' --jobs 2", (dir / "s.json").string(), (dir / "o").string()),
      dir);
  REQUIRE(r.status == 0);
  std::size_t lines = 0;
  for (std::size_t at = r.err.find("warning: "); at != std::string::npos;
       at = r.err.find("warning: ", at + 1)) {
    ++lines;
  }
  // Two codes, one line each, in code order, for the 3 runs that all had both.
  CHECK(lines == 2);
  const auto below = r.err.find(
      "warning: deadline_below_minimum_delay: 3 of 3 runs; first runs/workers=4_rep0: the "
      "deadline 0.01 s is below the smallest possible delay of every worker (1 s)");
  const auto silent = r.err.find(
      "warning: no_worker_heard: 3 of 3 runs; first runs/workers=4_rep0: no worker was heard in 5 "
      "of 5 iterations");
  CHECK(below != std::string::npos);
  CHECK(silent != std::string::npos);
  CHECK(below < silent);
  CHECK(fs::exists(dir / "o" / "runs" / "workers=4_rep0" / "trace.csv"));
  const Result quiet = run(
      fmt::format("sweep '{}' -o '{}' -q", (dir / "s.json").string(), (dir / "q").string()), dir);
  REQUIRE(quiet.status == 0);
  CHECK(quiet.out.empty());
  CHECK(quiet.err.empty());
  CHECK(slurp(dir / "o" / "index.csv") == slurp(dir / "q" / "index.csv"));
}

TEST_CASE("cli: --help names the run folders and the short options", "[experiments][cli][quiet]") {
  const auto dir = scratch("help_frontdoor");
  const Result sweep = run("sweep --help", dir);
  CHECK(sweep.out.find("runs/<slug>/") != std::string::npos);
  CHECK(sweep.out.find("<index>-<slug>") == std::string::npos);
  for (const char* command : {"run", "sweep", "fit", "check", "init"}) {
    CHECK(run(fmt::format("{} --help", command), dir).out.find("-o,--out") != std::string::npos);
  }
  for (const char* command : {"run", "sweep", "theory", "advise", "fit"}) {
    CHECK(run(fmt::format("{} --help", command), dir).out.find("-q,--quiet") != std::string::npos);
  }
}

TEST_CASE("cli: every command takes -q and prints the same result with it",
          "[experiments][cli][quiet]") {
  const auto dir = scratch("quiet_everywhere");
  for (const char* command : {"run",
                              "codes",
                              "theory",
                              "check",
                              "sweep",
                              "list",
                              "fit",
                              "trace import",
                              "advise",
                              "validate",
                              "init",
                              "whatif"}) {
    INFO(command);
    CHECK(run(fmt::format("{} --help", command), dir).out.find("-q,--quiet") != std::string::npos);
  }
  std::ofstream(dir / "times.csv") << "iteration,worker,seconds\n0,0,1.5\n0,1,2\n1,0,1\n1,1,3\n";
  const std::string codes = R"(codes --workers 4 --code '{"kind": "frc", "d": 2}')";
  const std::string import = fmt::format("trace import '{}' --format csv --out '{}'",
                                         (dir / "times.csv").string(),
                                         (dir / "imported.csv").string());
  for (const std::string& line : {codes, import, std::string("init")}) {
    INFO(line);
    const Result loud = run(line, dir);
    const Result quiet = run(line + " -q", dir);
    REQUIRE(loud.status == 0);
    CHECK(quiet.status == 0);
    CHECK(quiet.out == loud.out);
    CHECK(quiet.err.empty());
  }
  // init explains its keys on stderr unless quiet.
  CHECK(run("init", dir).err.find("# what the keys mean") != std::string::npos);
}

TEST_CASE("cli: advise shows no iteration time for a scheme that did not reach the target",
          "[experiments][cli]") {
  // Four iterations: the baselines and time-optimal methods, simulated directly, reach the target
  // in no run; their time per update is the time at target over the iterations, so they have none.
  const auto dir = scratch("advise_not_reached");
  const fs::path examples =
      fs::path(stragglersim::testing::source_dir()) / "experiments" / "examples";
  auto c = nlohmann::json::parse(slurp(examples / "advise_persistent.json"));
  c["optimizer"]["iterations"] = 4;
  c["delay"]["path"] = (examples / "persistent_stragglers.csv").string();
  const auto cfg = write_config(dir, c);
  const std::string line =
      fmt::format("advise '{}' --suboptimality 0.05 --repetitions 2 --fixed-step", cfg.string());
  const Result table = run(line, dir);
  REQUIRE(table.status == 0);
  CHECK(table.out.find("0.0000 not reached") == std::string::npos);
  const std::regex k_sync(R"(k-sync K=12 +- not reached +-  total: simulation)");
  CHECK(std::regex_search(table.out, k_sync));
  const Result json = run(line + " --json", dir);
  REQUIRE(json.status == 0);
  int unreached = 0;
  const nlohmann::json advice = nlohmann::json::parse(json.out);
  for (const auto& row : advice["schemes"]) {
    if (row.contains("problem") || !row["iterations_to_target"].is_null()) {
      continue;
    }
    ++unreached;
    INFO(row["scheme"]);
    const bool direct = row["time_to_target_method"].get<std::string>().starts_with("simulation");
    CHECK(row["iteration_time"].is_null() == direct);
  }
  CHECK(unreached > 0);
}

TEST_CASE("cli: advise prints the same bytes at any --threads", "[experiments][cli]") {
  // The table of the tuned default and --fixed-step's JSON at 1 and 2 threads (--threads sets
  // AdviceOptions::threads; scheme_advice_test compares every number in the process), and a
  // count below 1 refused before any work.
  auto c = config();
  c["optimizer"]["iterations"] = 20;
  const auto [dir, cfg] = scratch_config("advise_threads", c);
  for (const std::string mode : {" -q", " --fixed-step --json"}) {
    INFO(mode);
    const std::string line =
        fmt::format("advise '{}' --suboptimality 0.1 --repetitions 2{}", cfg.string(), mode);
    const Result one = run(line + " --threads 1", dir);
    REQUIRE(one.status == 0);
    const Result two = run(line + " --threads 2", dir);
    REQUIRE(two.status == 0);
    CHECK(two.out == one.out);
    CHECK(one.out.find("recommended") != std::string::npos);
  }
  const Result zero = run(fmt::format("advise '{}' --threads 0", cfg.string()), dir);
  CHECK(zero.status == 2);
  CHECK(zero.err.starts_with("error: --threads: Value 0 not in range 1 to "));
}

TEST_CASE("cli: every --help default lies in the range it states", "[experiments][cli]") {
  // A default outside its range ("--measure INT in [1 - 10000]=0") is a sentinel the user
  // cannot type back: such options show no default (their text says what "not given" means).
  const auto dir = scratch("help_ranges");
  const std::regex ranged(R"((--[a-z-]+) \S+ in \[([-0-9.e]+) - ([-0-9.e]+)\]=([-0-9.e]+))");
  int ranges = 0;
  for (const char* command : {"run",
                              "codes",
                              "theory",
                              "check",
                              "sweep",
                              "list",
                              "fit",
                              "trace import",
                              "advise",
                              "init",
                              "validate"}) {
    const Result help = run(fmt::format("{} --help", command), dir);
    REQUIRE(help.status == 0);
    for (auto it = std::sregex_iterator(help.out.begin(), help.out.end(), ranged);
         it != std::sregex_iterator();
         ++it) {
      const auto& m = *it;
      INFO(command << " " << m[1].str() << ": [" << m[2].str() << ", " << m[3].str() << "] default "
                   << m[4].str());
      CHECK(std::stod(m[2].str()) <= std::stod(m[4].str()));
      CHECK(std::stod(m[4].str()) <= std::stod(m[3].str()));
      ++ranges;
    }
  }
  CHECK(ranges >= 7);  // codes, theory, sweep --jobs, advise, init
  const Result advise = run("advise --help", dir);
  CHECK(advise.out.find("--measure INT:INT in [0 - 10000]=0") != std::string::npos);
  CHECK(advise.out.find("--suboptimality FLOAT:FLOAT in [1e-12 - 0.999999]\n") !=
        std::string::npos);
  const Result codes = run("codes --help", dir);
  CHECK(codes.out.find("--stragglers INT ") != std::string::npos);
  CHECK(codes.out.find("--wait-for INT ") != std::string::npos);
}

TEST_CASE("cli: theory --csv without --measure is refused before anything is written",
          "[experiments][cli]") {
  const auto [dir, cfg] = scratch_config("theory_csv", config());
  const Result r =
      run(fmt::format("theory '{}' --csv '{}'", cfg.string(), (dir / "m.csv").string()), dir);
  CHECK(r.status == 2);
  CHECK(r.err ==
        "error: <command line>: --csv without --measure; got no --measure; expected --measure N "
        "with N >= 1 (the CSV holds the measured runs)\n");
  CHECK_FALSE(fs::exists(dir / "m.csv"));
}

TEST_CASE("cli: theory --csv leaves the PL-routes column empty where only the convex route applies",
          "[experiments][cli]") {
  // Least squares at l2 = 0, FRC d = 3, r = 4 of 12: route A does not contract, so the bound is
  // the convex route's alone (docs/convergence.md) and there is no PL-route bound after t = 0.
  nlohmann::json c = stragglersim::testing::small_least_squares_config();
  c["workers"] = 12;
  c["data"]["rows"] = 120;
  c["data"].erase("condition");  // the generator's default conditioning: a large variance
  c["loss"]["l2"] = 0;
  c["code"]["d"] = 3;
  c["optimizer"]["iterations"] = 5;
  const auto [dir, cfg] = scratch_config("theory_convex_csv", c);
  const Result r = run(
      fmt::format("theory '{}' --measure 2 --csv '{}' -q", cfg.string(), (dir / "m.csv").string()),
      dir);
  REQUIRE(r.status == 0);
  std::ifstream in(dir / "m.csv");
  std::string line;
  std::getline(in, line);
  REQUIRE(line.ends_with(",bound_pl_routes"));
  int rows = 0;
  for (int t = 0; std::getline(in, line); ++t, ++rows) {
    INFO(line);
    // t = 0 is the known gap; afterwards the bound column is set and the PL column is empty.
    CHECK(line.ends_with(",") == (t > 0));
  }
  CHECK(rows == 6);
}

TEST_CASE("cli: fit of a missing file names no line", "[experiments][cli][quiet]") {
  const auto dir = scratch("fit_missing");
  const Result r = run("fit missing.csv", dir);
  CHECK(r.status == 2);
  CHECK(r.err ==
        "error: missing.csv: cannot open file (expected a readable CSV file of measured times)\n");
}
