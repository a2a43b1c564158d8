#include "experiments/predict/plan_optimum.h"

#include <fmt/format.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cmath>
#include <fstream>
#include <future>
#include <iostream>
#include <map>
#include <memory>
#include <mutex>
#include <nlohmann/json.hpp>
#include <sstream>
#include <thread>
#include <type_traits>
#include <variant>

#include "experiments/predict/predictions.h"
#include "models/base/fnv1a.h"

namespace stragglersim::experiments {
namespace {

/// The cache entry format; an entry of another format is ignored.
constexpr const char* kCacheFormat = "stragglersim f* cache 1";

/// The hash of the cache keys and checksums (hex() below prints it).
using models::Fnv1a;

std::string hex(const Fnv1a& h) { return fmt::format("{:016x}", h.value()); }

/// Adds the bytes of the training features (values, and the sparsity pattern) and labels.
void hash_data(const models::Dataset& data, Fnv1a& h) {
  std::visit(
      [&h](const auto& a) {
        using Matrix = std::decay_t<decltype(a)>;
        if constexpr (std::is_same_v<Matrix, models::DenseRows>) {
          h.add("dense");
          h.add(a.data(), static_cast<std::size_t>(a.size()) * sizeof(double));
        } else {
          h.add("sparse");
          const auto nnz = static_cast<std::size_t>(a.nonZeros());
          h.add(a.valuePtr(), nnz * sizeof(double));
          h.add(a.innerIndexPtr(), nnz * sizeof(*a.innerIndexPtr()));
          h.add(a.outerIndexPtr(),
                static_cast<std::size_t>(a.rows() + 1) * sizeof(*a.outerIndexPtr()));
        }
      },
      data.features);
  h.add(data.labels.data(), static_cast<std::size_t>(data.labels.size()) * sizeof(double));
}

/// What determines f* besides the data bytes: stored in the entry and checked on reading.
nlohmann::json objective_description(const RunPlan& plan) {
  const models::Objective& f = *plan.objective;
  const models::OptimumOptions options = optimum_options(plan);
  return {{"loss", std::string(f.loss().name())},
          {"l2", f.l2()},
          {"rows", f.rows()},
          {"features", f.dimension()},
          {"exact", models::exact_solver_fits(f)},
          {"relative_tolerance", options.relative_tolerance},
          {"max_iterations", options.max_iterations}};
}

std::string checksum(const nlohmann::json& entry) {
  Fnv1a h;
  h.add(entry.dump());
  return hex(h);
}

nlohmann::json entry_json(const std::string& key, const RunPlan& plan, const PlanOptimum& p) {
  const models::Optimum& o = p.optimum;
  nlohmann::json e = {{"format", kCacheFormat},
                      {"key", key},
                      {"objective", objective_description(plan)},
                      {"f_star", o.value},
                      {"x", std::vector<double>(o.x.data(), o.x.data() + o.x.size())},
                      {"method", o.method},
                      {"gradient_norm", o.gradient_norm},
                      {"newton_decrement",
                       o.newton_decrement ? nlohmann::json(*o.newton_decrement) : nlohmann::json()},
                      {"iterations", o.iterations},
                      {"iteration_limit", o.iteration_limit},
                      {"data_passes", o.data_passes},
                      {"stop", o.stop}};
  e["checksum"] = checksum(e);
  return e;
}

/// The entry's f*, or why it cannot be trusted.
std::variant<PlanOptimum, std::string> read_entry(const std::filesystem::path& path,
                                                  const std::string& key,
                                                  const RunPlan& plan) {
  std::ifstream in(path, std::ios::binary);
  nlohmann::json e = nlohmann::json::parse(in, nullptr, /*allow_exceptions=*/false);
  if (!e.is_object() || !e.contains("checksum") || !e["checksum"].is_string()) {
    return std::string("not a JSON object with a checksum");
  }
  const std::string stored = e["checksum"].get<std::string>();
  e.erase("checksum");
  if (checksum(e) != stored) {
    return std::string("checksum mismatch");
  }
  if (e.value("format", "") != kCacheFormat || e.value("key", "") != key ||
      e["objective"] != objective_description(plan)) {
    return std::string("written for another format, key or objective");
  }
  try {
    PlanOptimum p;
    p.source = "cache";
    models::Optimum& o = p.optimum;
    o.value = e.at("f_star").get<double>();
    const auto x = e.at("x").get<std::vector<double>>();
    if (static_cast<Eigen::Index>(x.size()) != plan.objective->dimension() ||
        !std::isfinite(o.value)) {
      return std::string("x of the wrong dimension or f* not finite");
    }
    o.x = Eigen::Map<const Eigen::VectorXd>(x.data(), static_cast<Eigen::Index>(x.size()));
    o.method = e.at("method").get<std::string>();
    o.gradient_norm = e.at("gradient_norm").get<double>();
    if (!e.at("newton_decrement").is_null()) {
      o.newton_decrement = e["newton_decrement"].get<double>();
    }
    o.iterations = e.at("iterations").get<int>();
    o.iteration_limit = e.at("iteration_limit").get<int>();
    o.data_passes = e.at("data_passes").get<int>();
    o.stop = e.at("stop").get<std::string>();
    return p;
  } catch (const nlohmann::json::exception& ex) {
    return std::string(ex.what());
  }
}

/// Writes the entry under a name unique to this process and thread, then renames it into
/// place: a reader sees the old entry, the new one, or none, never part of one.
void write_entry(const std::filesystem::path& path, const nlohmann::json& entry) {
  static std::atomic<unsigned> counter{0};
  std::error_code ec;
  std::filesystem::create_directories(path.parent_path(), ec);
  std::ostringstream thread;
  thread << std::this_thread::get_id();
  const auto tmp = path.parent_path() / fmt::format(".{}.tmp-{}-{}-{}",
                                                    path.filename().string(),
                                                    static_cast<long>(::getpid()),
                                                    thread.str(),
                                                    counter.fetch_add(1));
  {
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    out << entry.dump() << '\n';
    out.flush();
    if (!out) {
      std::filesystem::remove(tmp, ec);
      std::cerr << fmt::format("warning: f* cache: cannot write {}\n", tmp.string());
      return;
    }
  }
  std::filesystem::rename(tmp, path, ec);
  if (ec) {
    std::filesystem::remove(tmp, ec);
    std::cerr << fmt::format("warning: f* cache: cannot write {}\n", path.string());
  }
}

PlanOptimum solve(const RunPlan& plan, models::WorkerPool* pool) {
  std::optional<models::WorkerPool> own;
  if (pool == nullptr && plan.threads > 1) {
    pool = &own.emplace(plan.threads);
  }
  const auto started = std::chrono::steady_clock::now();
  PlanOptimum p;
  p.optimum = models::solve_optimum(*plan.objective, optimum_options(plan), pool);
  p.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
  return p;
}

/// The cache's entry when valid, else a solve stored there (a failed solve is not stored).
PlanOptimum cached_or_solved(const RunPlan& plan, models::WorkerPool* pool) {
  if (plan.f_star_cache.empty()) {
    return solve(plan, pool);
  }
  const std::string key = f_star_cache_key(plan);
  const auto path = plan.f_star_cache / (key + ".json");
  std::error_code ec;
  if (std::filesystem::exists(path, ec)) {
    const auto started = std::chrono::steady_clock::now();
    auto read = read_entry(path, key, plan);
    if (auto* hit = std::get_if<PlanOptimum>(&read)) {
      hit->seconds =
          std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
      return std::move(*hit);
    }
    std::cerr << fmt::format("warning: f* cache: ignoring {} ({}); solving again\n",
                             path.string(),
                             std::get<std::string>(read));
  }
  PlanOptimum p = solve(plan, pool);
  if (p.optimum.converged) {
    write_entry(path, entry_json(key, plan, p));
  }
  return p;
}

}  // namespace

std::string f_star_cache_key(const RunPlan& plan) {
  Fnv1a h;
  hash_data(plan.objective->data(), h);
  h.add(objective_description(plan).dump());
  return hex(h);
}

PlanOptimum plan_optimum(const RunPlan& plan, models::WorkerPool* pool) {
  // Solve once per live objective; callers that ask while the solve is under way (other jobs)
  // wait for it. The weak pointer tells a live entry from a dead objective whose address was
  // reused.
  struct Entry {
    std::weak_ptr<const models::Objective> objective;
    std::shared_future<PlanOptimum> optimum;
  };
  static std::mutex mutex;
  static std::map<const models::Objective*, Entry> solved;
  const models::Objective* key = plan.objective.get();
  std::promise<PlanOptimum> promise;
  std::shared_future<PlanOptimum> earlier;
  {
    const std::lock_guard lock(mutex);
    const auto it = solved.find(key);
    if (it != solved.end() && it->second.objective.lock() == plan.objective) {
      earlier = it->second.optimum;
    } else {
      std::erase_if(solved, [](const auto& e) { return e.second.objective.expired(); });
      solved[key] = Entry{plan.objective, promise.get_future().share()};
    }
  }
  if (earlier.valid()) {
    const auto started = std::chrono::steady_clock::now();
    PlanOptimum shared = earlier.get();  // outside the lock: other solves go on meanwhile
    shared.source = "cache";             // this caller did not solve, it waited
    shared.seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
    return shared;
  }
  try {
    PlanOptimum p = cached_or_solved(plan, pool);
    promise.set_value(p);
    return p;
  } catch (...) {
    // An interrupted or failed solve is not remembered: a later caller solves again.
    {
      const std::lock_guard lock(mutex);
      solved.erase(key);
    }
    promise.set_exception(std::current_exception());
    throw;
  }
}

}  // namespace stragglersim::experiments
