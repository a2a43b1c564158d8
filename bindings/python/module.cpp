// The native half of the `stragglersim` Python package (the Python half is
// stragglersim/__init__.py: the public API, docstrings, Run and the exceptions).
//
// Every function goes through the same entry points as the command line (plan_run_file /
// plan_run, execute_run, theory_report, inspect_code, expand_sweep + run_sweep), so a run from
// Python writes the bytes `stragglersim run` writes. A config is given either as JSON text (a
// Python dict serialised by the package; errors name it "<dict>", relative paths resolve against
// the current directory) or as a file path (read exactly as the CLI reads it).
//
// Long calls run on a worker thread while the calling thread waits with the GIL released, so
// other Python threads run; every 50 ms the waiting thread takes the GIL to run Python's signal
// handlers, and a KeyboardInterrupt (or any exception a handler raises) sets the stop flag that
// the run polls after each row (the run ends there, as after the CLI's SIGINT) and the other
// calls' set-up checks (call_abandonable); the exception propagates.

#include <fmt/format.h>
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <atomic>
#include <charconv>
#include <chrono>
#include <condition_variable>
#include <csignal>
#include <exception>
#include <filesystem>
#include <fstream>
#include <limits>
#include <mutex>
#include <optional>
#include <sstream>
#include <string>
#include <thread>
#include <type_traits>
#include <vector>

#include "experiments/build_info.h"
#include "experiments/config/config_error.h"
#include "experiments/config/json_reader.h"
#include "experiments/config/memory_budget.h"
#include "experiments/config/run_plan.h"
#include "experiments/entry_points.h"
#include "experiments/run_output.h"
#include "experiments/sweep.h"
#include "models/base/stop_request.h"
#include "sim/fastpath/delay_only.h"

namespace py = pybind11;

namespace stragglersim::experiments {
namespace {

constexpr const char* kDictSource = "<dict>";

/// A config from Python: JSON text of a dict, or a file path.
struct Input {
  std::optional<std::string> text;
  std::string path;
};

/// A dict's JSON text, read as a config file is (parse_json: the same nesting and number-range
/// checks and messages, with "<dict>" as the file).
nlohmann::json parse_dict(const std::string& text) { return parse_json(text, kDictSource); }

/// The JSON, its name in messages and the folder relative paths resolve against.
struct Loaded {
  nlohmann::json json;
  std::string source;
  std::filesystem::path base_dir;
};

Loaded load(const Input& input) {
  if (input.text) {
    return {parse_dict(*input.text), kDictSource, std::filesystem::current_path()};
  }
  const std::filesystem::path path(input.path);
  return {read_json_file(path), path.string(), path.parent_path()};
}

RunPlan plan(const Input& input) {
  if (!input.text) {
    return plan_run_file(input.path);  // exactly the CLI's path
  }
  const Loaded l = load(input);
  return plan_run(l.json, l.source, l.base_dir);
}

/// Runs `job(stop)` on a worker thread; the caller waits with the GIL released and checks
/// Python's signals every 50 ms (see the file comment). Rethrows the job's exception.
/// `record_signal`: also record SIGINT in models::stop_signal() once a handler raised (and clear
/// it when the call ends), for jobs that run inside a models::StopScope (call_abandonable).
template <typename Result, typename Job>
Result call_interruptible(Job job, bool record_signal = false) {
  std::atomic<bool> stop{false};
  std::optional<Result> result;
  std::exception_ptr error;
  bool interrupted = false;
  {
    const py::gil_scoped_release release;
    std::mutex mutex;
    std::condition_variable done_cv;
    bool done = false;
    std::thread worker([&] {
      try {
        result.emplace(job(stop));
      } catch (...) {
        error = std::current_exception();
      }
      const std::lock_guard lock(mutex);
      done = true;
      done_cv.notify_all();
    });
    std::unique_lock lock(mutex);
    while (!done_cv.wait_for(lock, std::chrono::milliseconds(50), [&] { return done; })) {
      if (interrupted) {
        continue;
      }
      lock.unlock();
      {
        const py::gil_scoped_acquire acquire;
        if (PyErr_CheckSignals() != 0) {
          interrupted = true;
          stop.store(true);
          if (record_signal) {
            models::stop_signal().store(SIGINT);
          }
        }
      }
      lock.lock();
    }
    lock.unlock();
    worker.join();
    if (record_signal && interrupted) {
      models::stop_signal().store(0);  // this call's interrupt is over: later calls run
    }
  }
  if (interrupted) {
    throw py::error_already_set();  // the handler's exception, usually KeyboardInterrupt
  }
  if (error) {
    std::rethrow_exception(error);
  }
  return std::move(*result);
}

/// For the calls without a stop hook of their own (theory, code, fit, advise, validate, trace
/// import): the job runs inside a models::StopScope and a Python signal is recorded for it, so
/// the checks the CLI's `run` set-up uses (data loading, f*, the theory's gradient path) and
/// those of the fits' EM passes and the code report's patterns abandon it (StopRequested)
/// within one step instead of letting Ctrl-C wait for the whole computation.
template <typename Result, typename Job>
Result call_abandonable(Job job) {
  return call_interruptible<Result>(
      [&](const std::atomic<bool>& stop) {
        const models::StopScope scope;
        return job(stop);
      },
      true);
}

/// Columns holding counts (int64 in Python); every other column is float64.
bool is_count_column(const std::string& name) {
  return name == "iteration" || name == "workers_heard" || name == "partitions_covered";
}

std::vector<std::string> split_fields(const std::string& line) {
  std::vector<std::string> fields;
  std::stringstream stream(line);
  std::string field;
  while (std::getline(stream, field, ',')) {
    fields.push_back(field);
  }
  if (!line.empty() && line.back() == ',') {
    fields.emplace_back();
  }
  return fields;
}

template <typename T>
T parse_number(const std::string& text, const std::string& path) {
  // An empty cell is a value the run does not have (e.g. the gradient error of row 0): NaN.
  if constexpr (std::is_floating_point_v<T>) {
    if (text.empty()) {
      return std::numeric_limits<T>::quiet_NaN();
    }
  }
  T value{};
  const char* end = text.data() + text.size();
  const auto [ptr, ec] = std::from_chars(text.data(), end, value);
  if (ec != std::errc() || ptr != end) {
    throw std::runtime_error(path + ": not a number in the trace: '" + text + "'");
  }
  return value;
}

/// trace.csv as (column, numpy array) pairs in the file's column order. The CLI writes doubles
/// in their shortest round-trip form, so from_chars gives back the exact values.
py::list read_trace(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    throw std::runtime_error(path + ": cannot open trace");
  }
  std::string line;
  std::getline(in, line);
  const std::vector<std::string> names = split_fields(line);
  std::vector<std::vector<std::string>> cells(names.size());
  while (std::getline(in, line)) {
    const auto fields = split_fields(line);
    if (fields.size() != names.size()) {
      throw std::runtime_error(path + ": a row has a different number of fields than the header");
    }
    for (std::size_t c = 0; c < fields.size(); ++c) {
      cells[c].push_back(fields[c]);
    }
  }
  py::list columns;
  for (std::size_t c = 0; c < names.size(); ++c) {
    const auto rows = static_cast<py::ssize_t>(cells[c].size());
    if (is_count_column(names[c])) {
      py::array_t<std::int64_t> column(rows);
      auto* data = column.mutable_data();
      for (py::ssize_t i = 0; i < rows; ++i) {
        data[i] = parse_number<std::int64_t>(cells[c][static_cast<std::size_t>(i)], path);
      }
      columns.append(py::make_tuple(names[c], column));
    } else {
      py::array_t<double> column(rows);
      auto* data = column.mutable_data();
      for (py::ssize_t i = 0; i < rows; ++i) {
        data[i] = parse_number<double>(cells[c][static_cast<std::size_t>(i)], path);
      }
      columns.append(py::make_tuple(names[c], column));
    }
  }
  return columns;
}

/// `stragglersim run`: (status, error) of the run written into out_dir.
py::tuple run(const Input& input, const std::string& out_dir) {
  const auto outcome = call_interruptible<RunOutcome>([&](const std::atomic<bool>& stop) {
    const RunPlan p = plan(input);
    return execute_run(p, out_dir, [&stop] { return stop.load(std::memory_order_relaxed); });
  });
  return py::make_tuple(outcome.status, outcome.error);
}

/// `stragglersim theory --json` as JSON text.
std::string theory(const Input& input) {
  return call_abandonable<std::string>(
      [&](const std::atomic<bool>& /*stop*/) { return theory_report(plan(input)).dump(2); });
}

/// `stragglersim codes --json` as JSON text.
std::string code(int workers,
                 const std::string& code_text,
                 int partitions,
                 std::uint64_t seed,
                 int stragglers,
                 int wait_for,
                 int samples) {
  CodeRequest request;
  request.source = kDictSource;
  request.code = parse_dict(code_text);
  request.workers = workers;
  request.partitions = partitions;
  request.seed = seed;
  request.stragglers = stragglers;
  request.wait_for = wait_for;
  request.samples = samples;
  return call_abandonable<std::string>([&](const std::atomic<bool>& /*stop*/) {
    return code_report_json(inspect_code(request)).dump(2);
  });
}

/// `stragglersim sweep`: runs the sweep into out_dir; returns the number of failed runs.
std::size_t sweep(const Input& input, const std::string& out_dir, int jobs, int batch) {
  if (jobs < 1) {
    throw ConfigError("jobs must be at least 1; got " + std::to_string(jobs));
  }
  if (batch < 1) {
    throw ConfigError("batch must be at least 1 (1: one run at a time); got " +
                      std::to_string(batch));
  }
  const auto result = call_interruptible<SweepResult>([&](const std::atomic<bool>& stop) {
    const SweepSpec spec = [&] {
      if (!input.text) {
        return expand_sweep_file(input.path);
      }
      const Loaded l = load(input);
      return expand_sweep(l.json, l.source, l.base_dir);
    }();
    SweepOptions options;
    options.jobs = jobs;
    options.batch = batch;
    options.stop = &stop;
    return run_sweep(spec, out_dir, options);
  });
  return result.failed;
}

/// The iteration times of the config's cluster (workers, code, stopping, delay, stragglers,
/// seed) on the delay-only path: data, loss, optimizer and backend are replaced by a delay-only
/// run of `iterations` iterations, so the result equals trace["iteration_time"][1:] of that run.
py::array_t<double> iteration_times(const Input& input, std::uint64_t iterations) {
  auto times = call_interruptible<std::vector<double>>([&](const std::atomic<bool>& stop) {
    Loaded l = load(input);
    if (l.json.is_object()) {
      // The run of a config with data draws every worker: so do its iteration times.
      if (!l.json.contains("data") || !l.json["data"].is_null()) {
        l.json["sampler"] = "workers";
      }
      l.json["data"] = nullptr;
      l.json.erase("loss");
      l.json.erase("backend");
      l.json["optimizer"] = {{"iterations", iterations}};
    }
    const RunPlan p = plan_run(l.json, l.source, l.base_dir);
    // The result is held whole (8 bytes an iteration): refused like a run's allocations, before
    // any is made, rather than a MemoryError from the vector.
    const double bytes = 8.0 * static_cast<double>(iterations);
    if (bytes > static_cast<double>(memory_limit())) {
      throw ConfigError(fmt::format(
          "{}: iterations: {} iteration times would need about {} of memory; got {}; expected "
          "at most {} iterations (half the physical memory, as a run's --max-memory default)",
          l.source,
          iterations,
          format_bytes(bytes),
          iterations,
          memory_limit() / 8));
    }
    sim::DelayOnlySimulator simulator(p.make_delays(),
                                      p.scheme.rule,
                                      p.scheme.code,
                                      p.stragglers,
                                      p.seed,
                                      p.network,
                                      p.sampler,
                                      p.collective);
    std::vector<double> out;
    out.reserve(iterations);
    simulator.run(iterations, [&](const sim::DelayOnlyIteration& it) {
      if (stop.load(std::memory_order_relaxed)) {
        throw RunInterrupted();
      }
      out.push_back(it.iteration_time);
    });
    return out;
  });
  py::array_t<double> result(static_cast<py::ssize_t>(times.size()));
  std::copy(times.begin(), times.end(), result.mutable_data());
  return result;
}

/// `stragglersim fit TIMES.csv --json [--per-worker]` as JSON text.
std::string fit_text(const std::string& path, bool per_worker) {
  return call_abandonable<std::string>(
      [&](const std::atomic<bool>& /*stop*/) { return fit_times(path, per_worker).dump(2); });
}

/// ConfigError unless 1 <= threads <= thread_cap() (the range of the CLI's --threads).
void check_threads(int threads) {
  if (threads < 1 || threads > thread_cap()) {
    throw ConfigError(fmt::format(
        "threads: out of range; got {}; expected an integer in [1, {}]", threads, thread_cap()));
  }
}

/// `stragglersim advise CONFIG --json --threads N` as JSON text; suboptimality <= 0: the
/// config's target_loss; fit_path "": the config's own delay.
std::string advise_text(const Input& input,
                        double suboptimality,
                        int repetitions,
                        int measure,
                        const std::string& fit_path,
                        bool fixed_step,
                        int threads) {
  check_threads(threads);
  if (repetitions < 1 || measure < 0) {
    throw ConfigError(kDictSource +
                      std::string(": repetitions must be at least 1 and measure at "
                                  "least 0; got repetitions ") +
                      std::to_string(repetitions) + ", measure " + std::to_string(measure));
  }
  return call_abandonable<std::string>([&](const std::atomic<bool>& /*stop*/) {
    const Loaded l = load(input);
    AdviceOptions options;
    if (suboptimality > 0.0) {
      options.suboptimality = suboptimality;
    }
    options.repetitions = repetitions;
    options.measure = measure;
    options.fixed_step = fixed_step;
    options.threads = threads;
    return advise_report(l.json, l.source, l.base_dir, options, fit_path).dump(2);
  });
}

/// `stragglersim validate CONFIG --trace TIMES.csv --holdout H --threads N --json` as JSON text.
std::string validate_text(const Input& input,
                          const std::string& trace,
                          double holdout,
                          int threads) {
  check_threads(threads);
  return call_abandonable<std::string>([&](const std::atomic<bool>& /*stop*/) {
    const Loaded l = load(input);
    TimeToTargetOptions time_to_target;
    time_to_target.threads = threads;
    return validation_json(
               validate_file(l.json, l.source, l.base_dir, trace, holdout, time_to_target))
        .dump(2);
  });
}

/// Python's keyword arguments of trace_import(): None is "not given".
struct TraceImportArguments {
  std::optional<std::string> iteration;
  std::optional<std::string> worker;
  std::optional<std::string> seconds;
  std::optional<double> scale;
  std::optional<std::vector<std::string>> events;
  std::optional<std::string> group_by;
  std::string missing = "drop";
};

/// `stragglersim trace import` as JSON text of trace_import_json (the trace written to `out`).
std::string trace_import_text(const std::string& path,
                              const std::string& format,
                              const std::string& out,
                              const TraceImportArguments& a) {
  TraceImportRequest r;
  r.path = path;
  r.format = format;
  r.out = out;
  r.missing = a.missing;
  const auto take = [](const auto& given, auto& field, const char* name, auto& list) {
    if (given) {
      field = *given;
      list.emplace_back(name);
    }
  };
  take(a.iteration, r.csv.iteration_column, "--iteration", r.csv_only_given);
  take(a.worker, r.csv.worker_column, "--worker", r.csv_only_given);
  take(a.seconds, r.csv.seconds_column, "--seconds", r.csv_only_given);
  take(a.scale, r.csv.scale, "--scale", r.csv_only_given);
  take(a.events, r.chrome.events, "--events", r.chrome_only_given);
  take(a.group_by, r.group_by, "--group-by", r.chrome_only_given);
  return call_abandonable<std::string>([&](const std::atomic<bool>& /*stop*/) {
    return trace_import_json(r, import_trace(r)).dump(2);
  });
}

Input input_of(const std::optional<std::string>& text, const std::optional<std::string>& path) {
  return {text, path.value_or("")};
}

}  // namespace
}  // namespace stragglersim::experiments

PYBIND11_MODULE(_stragglersim, m) {
  namespace ex = stragglersim::experiments;
  m.doc() = "native part of stragglersim; use the stragglersim package";
  py::register_exception<ex::ConfigError>(m, "ConfigError", PyExc_ValueError);
  m.def(
      "run",
      [](const std::optional<std::string>& text,
         const std::optional<std::string>& path,
         const std::string& out) { return ex::run(ex::input_of(text, path), out); },
      py::arg("text"),
      py::arg("path"),
      py::arg("out"));
  m.def(
      "theory",
      [](const std::optional<std::string>& text, const std::optional<std::string>& path) {
        return ex::theory(ex::input_of(text, path));
      },
      py::arg("text"),
      py::arg("path"));
  m.def("code",
        &ex::code,
        py::arg("workers"),
        py::arg("code"),
        py::arg("partitions"),
        py::arg("seed"),
        py::arg("stragglers"),
        py::arg("wait_for"),
        py::arg("samples"));
  m.def(
      "sweep",
      [](const std::optional<std::string>& text,
         const std::optional<std::string>& path,
         const std::string& out,
         int jobs,
         int batch) { return ex::sweep(ex::input_of(text, path), out, jobs, batch); },
      py::arg("text"),
      py::arg("path"),
      py::arg("out"),
      py::arg("jobs"),
      py::arg("batch"));
  m.attr("DEFAULT_BATCH") = ex::kDefaultBatch;
  m.def(
      "iteration_times",
      [](const std::optional<std::string>& text,
         const std::optional<std::string>& path,
         std::uint64_t iterations) {
        return ex::iteration_times(ex::input_of(text, path), iterations);
      },
      py::arg("text"),
      py::arg("path"),
      py::arg("iterations"));
  m.def("read_trace", &ex::read_trace, py::arg("path"));
  m.def("fit", &ex::fit_text, py::arg("path"), py::arg("per_worker"));
  m.def(
      "advise",
      [](const std::optional<std::string>& text,
         const std::optional<std::string>& path,
         double suboptimality,
         int repetitions,
         int measure,
         const std::string& fit_path,
         bool fixed_step,
         int threads) {
        return ex::advise_text(ex::input_of(text, path),
                               suboptimality,
                               repetitions,
                               measure,
                               fit_path,
                               fixed_step,
                               threads);
      },
      py::arg("text"),
      py::arg("path"),
      py::arg("suboptimality"),
      py::arg("repetitions"),
      py::arg("measure"),
      py::arg("fit_path"),
      py::arg("fixed_step"),
      py::arg("threads"));
  m.def(
      "validate",
      [](const std::optional<std::string>& text,
         const std::optional<std::string>& path,
         const std::string& trace,
         double holdout,
         int threads) {
        return ex::validate_text(ex::input_of(text, path), trace, holdout, threads);
      },
      py::arg("text"),
      py::arg("path"),
      py::arg("trace"),
      py::arg("holdout"),
      py::arg("threads"));
  m.def(
      "trace_import",
      [](const std::string& path,
         const std::string& format,
         const std::string& out,
         const std::optional<std::string>& iteration,
         const std::optional<std::string>& worker,
         const std::optional<std::string>& seconds,
         std::optional<double> scale,
         const std::optional<std::vector<std::string>>& events,
         const std::optional<std::string>& group_by,
         const std::string& missing) {
        return ex::trace_import_text(
            path, format, out, {iteration, worker, seconds, scale, events, group_by, missing});
      },
      py::arg("path"),
      py::arg("format"),
      py::arg("out"),
      py::arg("iteration"),
      py::arg("worker"),
      py::arg("seconds"),
      py::arg("scale"),
      py::arg("events"),
      py::arg("group_by"),
      py::arg("missing"));
  m.attr("version") = ex::kVersion;
}
