#include "experiments/sweep_mpi.h"

#include <fmt/format.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <deque>
#include <functional>
#include <map>
#include <mutex>
#include <nlohmann/json.hpp>
#include <optional>
#include <stdexcept>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "experiments/config/config_error.h"
#include "models/base/error.h"

#ifdef STRAGGLERSIM_HAVE_MPI
#include <mpi.h>
#endif

namespace stragglersim::experiments {

#ifdef STRAGGLERSIM_HAVE_MPI
namespace {

namespace fs = std::filesystem;
using Json = nlohmann::json;

constexpr int kTag = 7113;

// Messages are small JSON texts. Waiting polls with a short sleep rather than blocking in MPI:
// Open MPI's blocking receive spins, and ranks share cores with the runs.
void send(const Json& message, int destination) {
  const std::string text = message.dump();
  MPI_Send(text.data(), static_cast<int>(text.size()), MPI_CHAR, destination, kTag, MPI_COMM_WORLD);
}

std::optional<std::pair<int, Json>> try_receive(int source) {
  int flag = 0;
  MPI_Status status;
  MPI_Iprobe(source, kTag, MPI_COMM_WORLD, &flag, &status);
  if (flag == 0) {
    return std::nullopt;
  }
  int count = 0;
  MPI_Get_count(&status, MPI_CHAR, &count);
  std::string text(static_cast<std::size_t>(count), '\0');
  MPI_Recv(
      text.data(), count, MPI_CHAR, status.MPI_SOURCE, kTag, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
  return std::pair{status.MPI_SOURCE, Json::parse(text)};
}

void pause() { std::this_thread::sleep_for(std::chrono::milliseconds(1)); }

Json receive_from_master() {
  for (;;) {
    if (auto message = try_receive(0)) {
      return message->second;
    }
    pause();
  }
}

/// Tells every other rank whether to go on (0) or to stop with that exit status.
void broadcast_status(int size, int status) {
  for (int r = 1; r < size; ++r) {
    send({{"status", status}}, r);
  }
}

void await_status() {
  const int status = receive_from_master().at("status").get<int>();
  if (status != 0) {
    throw RankStop{status};
  }
}

/// Rank 0's tasks not yet handed out (none once stopped), and the results of its own worker
/// thread waiting for the main thread; shared by the two threads.
class TaskQueue {
 public:
  explicit TaskQueue(const std::vector<std::size_t>& tasks) : tasks_(tasks) {}

  std::optional<std::size_t> take() {
    const std::lock_guard lock(mutex_);
    if (!go_ || next_ >= tasks_.size()) {
      return std::nullopt;
    }
    return tasks_[next_++];
  }
  void stop() {
    const std::lock_guard lock(mutex_);
    go_ = false;
  }
  void push_local_result(std::size_t task, Json result) {
    const std::lock_guard lock(mutex_);
    local_results_.emplace_back(task, std::move(result));
  }
  std::optional<std::pair<std::size_t, Json>> pop_local_result() {
    const std::lock_guard lock(mutex_);
    if (local_results_.empty()) {
      return std::nullopt;
    }
    std::optional<std::pair<std::size_t, Json>> result = std::move(local_results_.front());
    local_results_.pop_front();
    return result;
  }

 private:
  const std::vector<std::size_t>& tasks_;
  std::mutex mutex_;
  std::size_t next_ = 0;
  bool go_ = true;
  std::deque<std::pair<std::size_t, Json>> local_results_;
};

using Work = std::function<Json(std::size_t)>;
/// Called on rank 0's main thread with each result; returns whether to hand out more tasks.
using OnResult = std::function<bool(std::size_t, const Json&)>;

/// Rank 0: hands out `tasks` in order to the other ranks as they ask (each asks once at the
/// start and again with each result) and to one worker thread of rank 0, until none is left or
/// on_result says stop; every other rank then gets "end" in answer to its next message.
void hand_out(const std::vector<std::size_t>& tasks,
              int size,
              const Work& work,
              const OnResult& on_result) {
  TaskQueue queue(tasks);
  std::atomic<bool> local_done{false};
  std::thread local([&] {
    while (const auto task = queue.take()) {
      queue.push_local_result(*task, work(*task));
    }
    local_done.store(true);
  });
  auto record = [&](std::size_t task, const Json& result) {
    if (!on_result(task, result)) {
      queue.stop();
    }
  };
  int active = size - 1;
  for (;;) {
    bool idle = true;
    if (auto message = try_receive(MPI_ANY_SOURCE)) {
      idle = false;
      const auto& [source, body] = *message;
      if (body.contains("task")) {
        record(body["task"].get<std::size_t>(), body["result"]);
      }
      if (const auto task = queue.take()) {
        send({{"task", *task}}, source);
      } else {
        send({{"end", true}}, source);
        --active;
      }
    }
    const std::optional<std::pair<std::size_t, Json>> local_result = queue.pop_local_result();
    if (local_result) {
      idle = false;
      record(local_result->first, local_result->second);
    } else if (active == 0 && local_done.load()) {
      break;
    }
    if (idle) {
      pause();
    }
  }
  local.join();
}

/// Ranks other than 0: asks for tasks and does them until told "end".
void take_tasks(const Work& work) {
  send({{"ready", true}}, 0);
  for (;;) {
    const Json message = receive_from_master();
    if (message.contains("end")) {
      return;
    }
    const auto task = message.at("task").get<std::size_t>();
    send({{"task", task}, {"result", work(task)}}, 0);
  }
}

void run_phase(int rank,
               int size,
               const std::vector<std::size_t>& tasks,
               const Work& work,
               const OnResult& on_result) {
  if (rank == 0) {
    hand_out(tasks, size, work, on_result);
  } else {
    take_tasks(work);
  }
}

Work validation_work(const SweepSpec& spec, int size) {
  return [&spec, size](std::size_t index) {
    const RunCheck check = check_run(spec, spec.runs[index], size);
    return Json{{"error", check.error}, {"config_error", check.config_error}};
  };
}

Work run_work(const SweepSpec& spec, const fs::path& out_dir, const fs::path& f_star_cache) {
  return [&spec, out_dir, f_star_cache](std::size_t index) {
    const SweepRun& run = spec.runs[index];
    try {
      return Json{{"failed", execute_sweep_run(spec, run, out_dir, f_star_cache)}};
    } catch (const std::exception& e) {
      return Json{{"error", fmt::format("{}: {}", (out_dir / run.folder).string(), e.what())}};
    }
  };
}

/// Rank 0: the folder check and the runs to do, largest expected cost first (ties: index).
std::vector<std::size_t> plan_tasks(const SweepSpec& spec,
                                    const fs::path& out_dir,
                                    SweepResult& result,
                                    int size) {
  try {
    result.stale = check_sweep_folder(spec, out_dir);
    std::vector<std::size_t> todo = pending_runs(spec, out_dir, SweepShard{}, &result.skipped);
    std::stable_sort(todo.begin(), todo.end(), [&spec](std::size_t a, std::size_t b) {
      return spec.runs[a].cost > spec.runs[b].cost;
    });
    broadcast_status(size, 0);
    return todo;
  } catch (const std::exception& e) {
    broadcast_status(size, exit_status_of(e));
    throw;
  }
}

/// Rank 0: validates every pending run on all ranks; throws the first bad run's error in index
/// order after telling the other ranks to stop.
void validate_everywhere(const SweepSpec& spec,
                         const std::vector<std::size_t>& todo,
                         int size,
                         const SweepOptions& options) {
  std::map<std::size_t, Json> errors;  // by run index: the first in index order is reported
  run_phase(0, size, todo, validation_work(spec, size), [&](std::size_t index, const Json& r) {
    if (!r["error"].get<std::string>().empty()) {
      errors.emplace(index, r);
    }
    return options.stop == nullptr || !options.stop->load();
  });
  if (!errors.empty()) {
    const Json& first = errors.begin()->second;
    const bool config_error = first["config_error"].get<bool>();
    broadcast_status(size, config_error ? 2 : 1);
    if (config_error) {
      throw ConfigError(first["error"].get<std::string>());
    }
    throw std::runtime_error(first["error"].get<std::string>());
  }
  const bool stopped = options.stop != nullptr && options.stop->load();
  broadcast_status(size, stopped ? 130 : 0);
}

SweepResult master(const SweepSpec& spec,
                   const fs::path& out_dir,
                   const SweepOptions& options,
                   int size) {
  SweepResult result;
  result.total = spec.runs.size();
  const std::vector<std::size_t> todo = plan_tasks(spec, out_dir, result, size);
  validate_everywhere(spec, todo, size, options);
  if (options.stop != nullptr && options.stop->load()) {
    result.interrupted = true;
    return result;
  }
  FolderLock lock = lock_existing_sweep_folder(out_dir, /*sole_writer=*/true);
  record_sweep_folder(spec, out_dir, /*sole_writer=*/true, lock);
  if (options.progress) {
    options.progress(result.skipped, result.skipped, result.total);
  }
  std::optional<std::string> failure;
  run_phase(0,
            size,
            todo,
            run_work(spec, out_dir, options.f_star_cache),
            [&](std::size_t, const Json& r) {
              if (r.contains("error")) {
                failure = failure.value_or(r["error"].get<std::string>());
                return false;
              }
              ++result.ran;
              if (options.progress) {
                options.progress(result.skipped + result.ran, result.skipped, result.total);
              }
              return options.stop == nullptr || !options.stop->load();
            });
  if (failure) {
    throw std::runtime_error(*failure);
  }
  if (result.ran + result.skipped < result.total) {
    result.interrupted = true;
    return result;
  }
  result.failed = write_sweep_index(spec, out_dir);
  return result;
}

}  // namespace

SweepResult run_sweep_mpi(const SweepSpec& spec,
                          const std::filesystem::path& out_dir,
                          const SweepOptions& options,
                          int rank,
                          int size) {
  if (rank == 0) {
    return master(spec, out_dir, options, size);
  }
  await_status();  // the folder check
  run_phase(rank, size, {}, validation_work(spec, size), {});
  await_status();  // validation
  run_phase(rank, size, {}, run_work(spec, out_dir, options.f_star_cache), {});
  return {};
}
#else
SweepResult run_sweep_mpi(const SweepSpec& /*spec*/,
                          const std::filesystem::path& /*out_dir*/,
                          const SweepOptions& /*options*/,
                          int /*rank*/,
                          int /*size*/) {
  throw std::logic_error("run_sweep_mpi: MPI is not compiled in");
}
#endif

}  // namespace stragglersim::experiments
