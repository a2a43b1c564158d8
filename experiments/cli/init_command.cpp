// `stragglersim init [--data FILE] [--workers N] [-o FILE]`: a starting config that `run` accepts
// as it is. JSON has no comments: the config is plain JSON (stdout, or the file -o names) and
// what each key means is printed on stderr (docs/cli.md "init").

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <filesystem>
#include <iostream>
#include <memory>
#include <string>
#include <vector>

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
  bool quiet = false;  ///< no explanation on stderr
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
std::size_t distinct_labels(const fs::path& data, const std::string& source, bool header) {
  models::RowKeep none;
  models::LabelValues labels;
  try {
    if (source == "csv") {
      models::CsvOptions options;
      options.header = header;
      (void)models::read_csv(data.string(), options, &none, &labels);
    } else {
      (void)models::read_libsvm(data.string(), {}, &none, &labels);
    }
  } catch (const models::DataError& e) {
    throw ConfigError(fmt::format("--data: {}", e.what()));
  }
  return labels.values.size();
}

/// Whether a column name says it holds the label (label, y, target, class, ...; any case).
bool names_a_label(std::string name) {
  for (char& c : name) {
    c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  }
  for (const char* word : {"label", "target", "class", "outcome", "response"}) {
    if (name.find(word) != std::string::npos) {
      return true;
    }
  }
  return name == "y";
}

/// What init knows of a CSV file's first line: whether it is a header, and the label column.
struct CsvLayout {
  bool header = true;
  std::string label;  ///< the last column's name ("" without a header)
  /// Non-empty when the header names no column as a label: what to do about it.
  std::string no_label_note;
};

CsvLayout csv_layout(const fs::path& data) {
  const std::vector<std::string> first = models::csv_first_line(data.string());
  CsvLayout layout;
  if (models::all_numbers(first)) {
    layout.header = false;  // a row of numbers: the file has no header line
    return layout;
  }
  if (first.empty()) {
    return layout;  // the reader says what is wrong with the file
  }
  layout.label = first.back();
  if (!std::any_of(first.begin(), first.end(), names_a_label)) {
    layout.no_label_note = fmt::format(
        "no column of {} is named as a label (label, y, target, class, outcome, response), so "
        "the file may have no label column: the last column '{}' is taken as the label. Add a "
        "label column to the file, or name it with \"label_column\": \"<column>\" in data",
        data.filename().string(),
        layout.label);
  }
  return layout;
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

/// The config (keys in the order docs/model.md §7 explains them), the loss's reason and what
/// the user should know of the data file (or "").
nlohmann::ordered_json starting_config(const InitArguments& a,
                                       std::string& loss_note,
                                       std::string& notes) {
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
    const CsvLayout layout = source == "csv" ? csv_layout(path) : CsvLayout{};
    const std::size_t labels = distinct_labels(path, source, layout.header);
    const std::string whose = layout.label.empty()
                                  ? std::string("the file's labels")
                                  : fmt::format("the labels (column '{}', the last)", layout.label);
    loss = labels == 2 ? "logistic" : "least_squares";
    loss_note =
        labels == 2
            ? fmt::format("logistic: {} take two values", whose)
            : fmt::format("least_squares: {} take {} values (logistic needs two)", whose, labels);
    data = {{"source", source}, {"path", data_path_for(path, a.out)}};
    if (!layout.header) {
      data["header"] = false;
    }
    data["test_fraction"] = 0.2;
    notes = layout.no_label_note;
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

void print_explanation(const nlohmann::ordered_json& config,
                       const std::string& loss_note,
                       const std::string& notes) {
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
  if (config["data"]["source"] == "csv" && config["data"].contains("header")) {
    std::cerr
        << "#   csv: the first line is a row of numbers, so the file has no header line\n"
           "#     (\"header\": false) and the label is the last column; set \"label_column\"\n"
           "#     (a 0-based index) in data otherwise\n";
  } else if (config["data"]["source"] == "csv") {
    std::cerr << "#   csv: the first line is a header and the label is the last column; set\n"
                 "#     \"header\": false or \"label_column\" in data otherwise\n";
  }
  if (!notes.empty()) {
    std::cerr << fmt::format("# note: {}\n", notes);
  }
}

int command_init(const InitArguments& a) {
  if (!a.out.empty()) {
    check_output_file(a.out, "--out");
  }
  std::string loss_note;
  std::string notes;
  const nlohmann::ordered_json config = starting_config(a, loss_note, notes);
  // Planned as `run` plans it (the data read, the partitions checked against its rows), so a
  // config that would not run is never written.
  const std::string file = a.out.empty() ? std::string("<stdout>") : a.out;
  const fs::path base = a.out.empty() ? fs::current_path() : fs::absolute(a.out).parent_path();
  (void)plan_run(nlohmann::json::parse(config.dump()), file, base);
  const std::string text = config.dump(2) + "\n";
  if (a.out.empty()) {
    if (!a.quiet) {
      print_explanation(config, loss_note, notes);
    }
    std::cout << text;
    return 0;
  }
  // Written before the explanation: a failed write's error is then all that stderr says.
  OutputFile(a.out, "--out").commit(text);  // messages name the option, as fit --out's do
  if (a.quiet) {
    return 0;
  }
  print_explanation(config, loss_note, notes);
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
  add_quiet_flag(*cmd, a->quiet);
  return {cmd, [a] { return command_init(*a); }};
}

}  // namespace stragglersim::experiments
