// The text readers on a file read whole: one piece (max_pieces = 1, the single-threaded parse)
// against pieces on the hardware threads (max_pieces = 0, the default).
//   bm_read_csv/<rows>/<max_pieces>     a CSV of <rows> × 200 features and a label, with a
//                                       header, as the default experiment's train.csv;
//   bm_read_libsvm/<rows>/<max_pieces>  a LIBSVM file of <rows> rows of 88 non-zeros among
//                                       15 509 features, the covtype-like shape, dense = false.
// Each file is written once into the system's temporary folder and removed at exit.

#include <benchmark/benchmark.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <random>
#include <string>

#include "models/csv_reader.h"
#include "models/libsvm_reader.h"

namespace stragglersim::models {
namespace {

/// A file per (kind, rows), written on first use and removed when the process exits.
class Files {
 public:
  Files() = default;
  Files(const Files&) = delete;
  Files& operator=(const Files&) = delete;
  Files(Files&&) = delete;
  Files& operator=(Files&&) = delete;
  ~Files() {
    for (const auto& [key, path] : paths_) std::filesystem::remove(path);
  }

  const std::string& csv(long rows) {
    std::string& path = paths_["csv" + std::to_string(rows)];
    if (path.empty()) {
      path = name("csv", rows);
      std::ofstream out(path);
      std::mt19937_64 engine(1);
      std::normal_distribution<double> normal(0.0, 1.0);
      for (int j = 0; j < 200; ++j) out << 'x' << j << ',';
      out << "label\n";
      for (long i = 0; i < rows; ++i) {
        for (int j = 0; j < 200; ++j) out << normal(engine) << ',';
        out << i % 2 << '\n';
      }
    }
    return path;
  }

  const std::string& libsvm(long rows) {
    std::string& path = paths_["svm" + std::to_string(rows)];
    if (path.empty()) {
      path = name("svm", rows);
      std::ofstream out(path);
      std::mt19937_64 engine(2);
      std::normal_distribution<double> normal(0.0, 1.0);
      std::uniform_int_distribution<int> gap(1, 2 * 15509 / 88 - 1);
      for (long i = 0; i < rows; ++i) {
        out << (i % 2 == 0 ? "+1" : "-1");
        int column = 0;
        for (int k = 0; k < 88; ++k) {
          column += gap(engine);
          if (column > 15509) break;
          out << ' ' << column << ':' << normal(engine);
        }
        out << '\n';
      }
    }
    return path;
  }

 private:
  static std::string name(const char* kind, long rows) {
    return (std::filesystem::temp_directory_path() /
            ("stragglersim_reader_benchmark_" + std::to_string(rows) + "." + kind))
        .string();
  }
  std::map<std::string, std::string> paths_;
};

Files& files() {
  static Files instance;
  return instance;
}

void bm_read_csv(benchmark::State& state) {
  const std::string& path = files().csv(state.range(0));
  CsvOptions options;
  options.max_pieces = static_cast<unsigned>(state.range(1));
  for (auto _ : state) {
    const Dataset data = read_csv(path, options);
    benchmark::DoNotOptimize(data.labels.data());
  }
  state.SetBytesProcessed(state.iterations() *
                          static_cast<std::int64_t>(std::filesystem::file_size(path)));
}

void bm_read_libsvm(benchmark::State& state) {
  const std::string& path = files().libsvm(state.range(0));
  LibsvmOptions options;
  options.dense = false;
  options.max_pieces = static_cast<unsigned>(state.range(1));
  for (auto _ : state) {
    const Dataset data = read_libsvm(path, options);
    benchmark::DoNotOptimize(data.labels.data());
  }
  state.SetBytesProcessed(state.iterations() *
                          static_cast<std::int64_t>(std::filesystem::file_size(path)));
}

BENCHMARK(bm_read_csv)
    ->Args({4800, 1})
    ->Args({4800, 0})
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();
BENCHMARK(bm_read_libsvm)
    ->Args({100000, 1})
    ->Args({100000, 0})
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();

}  // namespace
}  // namespace stragglersim::models
