// `stragglersim init [--data FILE] [--workers N] [-o FILE]`: a starting config that `run` accepts
// as it is. JSON has no comments: the config is plain JSON (stdout, or the file -o names) and
// what each key means is printed on stderr (docs/cli.md "init").

#include <fmt/format.h>

#include <cctype>
#include <filesystem>
#include <iostream>
#include <memory>
#include <string>

#include "experiments/cli/commands.h"
#include "experiments/config/config_error.h"
#include "experiments/config/factories.h"
#include "experiments/config/run_plan.h"
#include "experiments/output_file.h"
#include "experiments/run_output.h"
#include "models/csv_reader.h"
#include "models/libsvm_reader.h"

namespace stragglersim::experiments {
namespace {

namespace fs = std::filesystem;

struct InitArguments {
  std::string data;
  int workers = 8;
  std::string out;
};

/// The data source of a file, from its extension: csv, or libsvm for the LIBSVM extensions.
std::string source_of(const fs::path& data) {
  std::string ext = data.extension().string();
  for (char& c : ext) {
    c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  }
  if (ext == ".csv") {
    return "csv";
  }
  if (ext == ".libsvm" || ext == ".svm" || ext == ".svmlight" || ext == ".txt" || ext == ".t") {
    return "libsvm";
  }
  throw ConfigError(fmt::format(
      "--data: unknown file format; got \"{}\"; expected a name ending in .csv (CSV, label in "
      "the last column) or .libsvm, .svm, .svmlight, .txt, .t (LIBSVM)",
      data.string()));
}

/// The distinct labels of the file (every row parsed and validated, none kept).
std::size_t distinct_labels(const fs::path& data, const std::string& source) {
  models::RowKeep none;
  models::LabelValues labels;
  try {
    if (source == "csv") {
      (void)models::read_csv(data.string(), {}, &none, &labels);
    } else {
      (void)models::read_libsvm(data.string(), {}, &none, &labels);
    }
  } catch (const models::DataError& e) {
    throw ConfigError(fmt::format("--data: {}", e.what()));
  }
  return labels.values.size();
}

/// The data path as the config must spell it: relative to the config's folder (the current
/// folder when the config goes to stdout), absolute when there is no relative path.
std::string data_path_for(const fs::path& data, const std::string& out) {
  const fs::path folder = out.empty() ? fs::current_path() : fs::absolute(out).parent_path();
  std::error_code ec;
  const fs::path relative = fs::relative(fs::absolute(data), folder, ec);
  return ec || relative.empty() ? fs::absolute(data).string() : relative.generic_string();
}

/// The shifted-exponential row's own defaults, so the config shows the values a run takes.
nlohmann::ordered_json default_delay() {
  nlohmann::ordered_json delay = {{"kind", "shifted_exponential"}};
  for (const auto& row : delay_factories()) {
    if (row.name == "shifted_exponential") {
      for (const auto& key : row.keys) {
        const auto value = nlohmann::ordered_json::parse(key.default_value, nullptr, false);
        delay[key.name] = value.is_discarded() ? nlohmann::ordered_json(key.default_value) : value;
      }
    }
  }
  return delay;
}

/// The config (keys in the order docs/model.md §7 explains them) and the loss's reason.
nlohmann::ordered_json starting_config(const InitArguments& a, std::string& loss_note) {
  nlohmann::ordered_json data;
  std::string name = "start";
  std::string loss = "logistic";
  if (a.data.empty()) {
    data = {{"source", "synthetic"},
            {"generator", "gaussian_mixture"},
            {"rows", 2000},
            {"features", 20},
            {"test_fraction", 0.2}};
    loss_note = "logistic: the synthetic data has two classes";
  } else {
    const fs::path path(a.data);
    const std::string source = source_of(path);
    const std::size_t labels = distinct_labels(path, source);
    loss = labels == 2 ? "logistic" : "least_squares";
    loss_note = labels == 2 ? "logistic: the file's labels take two values"
                            : fmt::format(
                                  "least_squares: the file's labels take {} values "
                                  "(logistic needs two)",
                                  labels);
    data = {{"source", source}, {"path", data_path_for(path, a.out)}, {"test_fraction", 0.2}};
    name = path.stem().string();
  }
  return {{"name", name},
          {"seed", 1},
          {"workers", a.workers},
          {"data", data},
          {"loss", {{"kind", loss}, {"l2", 0.0001}}},
          {"code", {{"kind", "uncoded"}}},
          {"stopping", {{"rule", "all"}}},
          {"delay", default_delay()},
          {"stragglers", "cancel"},
          {"optimizer", {{"kind", "gd"}, {"step", "auto"}, {"iterations", 100}}}};
}

void print_explanation(const nlohmann::ordered_json& config, const std::string& loss_note) {
  std::cerr << fmt::format(
      "# what the keys mean (JSON has no comments; docs/model.md section 7 has every key):\n"
      "#   workers {}: simulated workers; partitions default to one per worker\n"
      "#   data: {}; test_fraction 0.2 of the rows are held out for the test metric\n"
      "#   loss: {}\n"
      "#   code uncoded, stopping all: the baseline that waits for every worker; try\n"
      "#     \"code\": {{\"kind\": \"frc\", \"d\": 2}}, \"stopping\": {{\"rule\": \"decodable\"}}\n"
      "#     (stragglersim list codes, stragglersim list rules; stragglersim advise ranks them)\n"
      "#   delay: each worker's time per iteration (stragglersim list delays; stragglersim fit\n"
      "#     TIMES.csv fits one to measured times)\n"
      "#   optimizer: gradient descent, step auto = 1/smoothness, 100 iterations\n",
      config["workers"].get<int>(),
      config["data"]["source"].get<std::string>() == "synthetic"
          ? std::string("a synthetic two-class Gaussian mixture")
          : fmt::format("{} file {}",
                        config["data"]["source"].get<std::string>(),
                        config["data"]["path"].get<std::string>()),
      loss_note);
  if (config["data"]["source"] == "csv") {
    std::cerr << "#   csv: the first line is a header and the label is the last column; set\n"
                 "#     \"header\": false or \"label_column\" in data otherwise\n";
  }
}

int command_init(const InitArguments& a) {
  if (!a.out.empty()) {
    check_output_file(a.out, "--out");
  }
  std::string loss_note;
  const nlohmann::ordered_json config = starting_config(a, loss_note);
  // Planned as `run` plans it (the data read, the partitions checked against its rows), so a
  // config that would not run is never written.
  const std::string file = a.out.empty() ? std::string("<stdout>") : a.out;
  const fs::path base = a.out.empty() ? fs::current_path() : fs::absolute(a.out).parent_path();
  (void)plan_run(nlohmann::json::parse(config.dump()), file, base);
  const std::string text = config.dump(2) + "\n";
  if (a.out.empty()) {
    print_explanation(config, loss_note);
    std::cout << text;
    return 0;
  }
  // Written before the explanation: a failed write's error is then all that stderr says.
  OutputFile(a.out, "--out").commit(text);  // messages name the option, as fit --out's do
  print_explanation(config, loss_note);
  std::cerr << fmt::format("wrote {}; run it: stragglersim run {} -o out\n", a.out, a.out);
  return 0;
}

}  // namespace

Subcommand add_init_command(CLI::App& app) {
  auto a = std::make_shared<InitArguments>();
  auto* cmd = app.add_subcommand(
      "init",
      "write a starting config for a data file (JSON on stdout or -o; what each key means on "
      "stderr)");
  cmd->add_option("--data",
                  a->data,
                  "LIBSVM (.libsvm .svm .svmlight .txt .t) or CSV (.csv) file; without it, "
                  "synthetic data");
  cmd->add_option("--workers", a->workers, "simulated workers")->check(CLI::Range(1, 100000));
  cmd->add_option("-o,--out", a->out, "write the config here instead of stdout");
  return {cmd, [a] { return command_init(*a); }};
}

}  // namespace stragglersim::experiments
