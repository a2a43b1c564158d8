#include "experiments/config/requirements.h"

#include <fmt/format.h>

#include <algorithm>
#include <functional>

#include "experiments/config/config_error.h"
#include "experiments/config/run_plan.h"

namespace stragglersim::experiments {
namespace {

/// What the checker reads of the planned run, once: each value as a requirement compares it and
/// as a refusal shows it (the config's own value where it has one).
struct RunFacts {
  bool delay_only = false;
  std::string code;
  int partitions = 0;
  int workers = 0;
  bool real_time = false;
  std::string backend;
  nlohmann::json optimizer;
  nlohmann::json batch;  ///< null: no minibatch
  nlohmann::json stragglers;
  nlohmann::json rescale;
  nlohmann::json inject;   ///< false: the backend injects no delays
  nlohmann::json faults;   ///< null or an empty array: none
  nlohmann::json network;  ///< null: no network block
  nlohmann::json rule;     ///< the stopping rule's name
  bool asynchronous = false;
};

RunFacts facts_of(const RunPlan& plan, const nlohmann::json& config) {
  RunFacts f;
  f.delay_only = plan.delay_only();
  f.code = plan.scheme.code->name();
  f.partitions = plan.scheme.code->partitions();
  f.workers = plan.workers;
  f.real_time = plan.backend.traits.real_time;
  f.backend = plan.backend.name;
  const nlohmann::json& optimizer = config.at("optimizer");
  f.optimizer = optimizer.value("kind", nlohmann::json("gd"));
  f.batch = plan.batch ? optimizer.at("batch") : nlohmann::json();
  f.stragglers = config.value("stragglers", nlohmann::json("cancel"));
  f.rescale = config.value("rescale", nlohmann::json("none"));
  const nlohmann::json backend = config.value("backend", nlohmann::json::object());
  f.inject = backend.value("inject", nlohmann::json(true));
  f.faults = backend.value("faults", nlohmann::json());
  f.network = config.value("network", nlohmann::json());
  f.rule = config.at("stopping").value("rule", nlohmann::json());
  f.asynchronous = plan.scheme.rule->update_shape().has_value();
  return f;
}

using Unmet = std::function<std::optional<nlohmann::json>(const RunFacts&)>;

/// One present requirement, uniformly: its name in listings, where its conflict sits, its
/// default wording, and its test on the run (the value to show when unmet, nullopt when met).
struct Item {
  std::string name;
  std::string pointer;
  std::string what;
  std::string accepted;
  nlohmann::json listed;
  const Wording* wording = nullptr;
  Unmet unmet;
};

/// `shown` when `conflict`, else nullopt.
std::optional<nlohmann::json> shown_if(bool conflict, const nlohmann::json& shown) {
  return conflict ? std::optional<nlohmann::json>(shown) : std::nullopt;
}

/// A yes/no requirement, listed as true.
Item flag(std::string name,
          std::string pointer,
          std::string what,
          std::string accepted,
          const Wording& wording,
          Unmet unmet) {
  return {std::move(name),
          std::move(pointer),
          std::move(what),
          std::move(accepted),
          true,
          &wording,
          std::move(unmet)};
}

/// A OneOf, listed as its values: unmet when the run's value `of` is not one of them.
Item one_of(std::string name,
            std::string pointer,
            std::string what,
            std::string accepted,
            const OneOf& need,
            std::function<nlohmann::json(const RunFacts&)> of) {
  return {std::move(name),
          std::move(pointer),
          std::move(what),
          std::move(accepted),
          need.values,
          &need.wording,
          [values = need.values, of = std::move(of)](const RunFacts& f) {
            const nlohmann::json value = of(f);
            const bool listed =
                value.is_string() &&
                std::find(values.begin(), values.end(), value.get<std::string>()) != values.end();
            return shown_if(!listed, value);
          }};
}

/// A OneOf on the top-level choice `key`, whose absence means `fallback`: "needs no <noun>"
/// when only the fallback is accepted ("no rescale"), and "<key> absent or a" accepted.
Item top_level(std::string name,
               const std::string& key,
               const std::string& fallback,
               const std::string& noun,
               const OneOf& need,
               std::function<nlohmann::json(const RunFacts&)> of) {
  std::vector<std::string> accepted = {"absent"};
  accepted.insert(accepted.end(), need.values.begin(), need.values.end());
  return one_of(std::move(name),
                "/" + key,
                need.values == std::vector<std::string>{fallback}
                    ? "no " + noun
                    : key + " " + or_list(need.values),
                key + " " + or_list(accepted),
                need,
                std::move(of));
}

/// The present requirements of `r` on the scheme and the clock (data, code, partitions,
/// backend), in checking order.
void add_scheme_items(const Requirements& r, std::vector<Item>& items) {
  if (r.needs_data) {
    items.push_back(
        flag("needs_data",
             "/data",
             "data",
             "a data object",
             r.needs_data->wording,
             [](const RunFacts& f) { return shown_if(f.delay_only, "\"data\": null"); }));
  }
  if (r.codes) {
    const auto& values = r.codes->values;
    items.push_back(one_of("codes",
                           "/code/kind",
                           fmt::format("the {} code", or_list(values)),
                           "code kind " + or_list(values),
                           *r.codes,
                           [](const RunFacts& f) { return nlohmann::json(f.code); }));
  }
  if (r.partitions_per_worker) {
    const int k = r.partitions_per_worker->value;
    Item item = flag(
        "partitions_per_worker",
        "/partitions",
        k == 1 ? std::string("one partition per worker")
               : fmt::format("{} partitions per worker", k),
        k == 1 ? std::string("partitions = workers") : fmt::format("partitions = {} * workers", k),
        r.partitions_per_worker->wording,
        [k](const RunFacts& f) {
          return shown_if(f.partitions != std::int64_t{k} * f.workers, f.partitions);
        });
    item.listed = k;
    items.push_back(std::move(item));
  }
  if (r.needs_simulated_clock) {
    items.push_back(flag("needs_simulated_clock",
                         "/backend/kind",
                         "the simulated clock",
                         "a backend on the simulated clock",
                         r.needs_simulated_clock->wording,
                         [](const RunFacts& f) { return shown_if(f.real_time, f.backend); }));
  }
}

/// Then those on the optimizer and the top-level choices, and on the backend's delays.
void add_run_items(const Requirements& r, std::vector<Item>& items) {
  if (r.optimizer) {
    const auto& values = r.optimizer->values;
    items.push_back(one_of("optimizer",
                           "/optimizer/kind",
                           "optimizer " + or_list(values),
                           "optimizer kind " + or_list(values),
                           *r.optimizer,
                           [](const RunFacts& f) { return f.optimizer; }));
  }
  if (r.no_minibatch) {
    items.push_back(flag("no_minibatch",
                         "/optimizer/batch",
                         "no optimizer.batch",
                         "no batch key",
                         r.no_minibatch->wording,
                         [](const RunFacts& f) { return shown_if(!f.batch.is_null(), f.batch); }));
  }
  if (r.straggler_policy) {
    items.push_back(top_level("straggler_policy",
                              "stragglers",
                              "cancel",
                              "straggler policy",
                              *r.straggler_policy,
                              [](const RunFacts& f) { return f.stragglers; }));
  }
  if (r.rescale) {
    items.push_back(
        top_level("rescale", "rescale", "none", "rescale", *r.rescale, [](const RunFacts& f) {
          return f.rescale;
        }));
  }
  if (r.injected_delays) {
    items.push_back(flag("injected_delays",
                         "/backend/inject",
                         "the injected delays",
                         "\"inject\": true",
                         r.injected_delays->wording,
                         [](const RunFacts& f) { return shown_if(f.inject == false, f.inject); }));
  }
  if (r.no_faults) {
    items.push_back(flag("no_faults",
                         "/backend/faults",
                         "no faults",
                         "no faults",
                         r.no_faults->wording,
                         [](const RunFacts& f) { return shown_if(!f.faults.empty(), f.faults); }));
  }
}

/// Then those of an aggregation on the rest of the run (no network block, a synchronous rule).
void add_aggregation_items(const Requirements& r, std::vector<Item>& items) {
  if (r.no_network) {
    items.push_back(
        flag("no_network",
             "/network",
             "no network block",
             "no \"network\" block",
             r.no_network->wording,
             [](const RunFacts& f) { return shown_if(!f.network.is_null(), f.network); }));
  }
  if (r.synchronous) {
    items.push_back(flag("synchronous",
                         "/stopping/rule",
                         "a synchronous rule",
                         "a synchronous stopping rule",
                         r.synchronous->wording,
                         [](const RunFacts& f) { return shown_if(f.asynchronous, f.rule); }));
  }
}

/// The present requirements of `r` in checking order.
std::vector<Item> items_of(const Requirements& r) {
  std::vector<Item> items;
  add_scheme_items(r, items);
  add_run_items(r, items);
  add_aggregation_items(r, items);
  return items;
}

std::string accepted_of(const Item& item) {
  return item.wording->accepted.empty() ? item.accepted : item.wording->accepted;
}

[[noreturn]] void refuse(const Declaration& row,
                         const Item& item,
                         const nlohmann::json& conflict,
                         const std::string& file) {
  const Wording& w = *item.wording;
  std::string problem = w.problem;
  if (problem.empty()) {
    problem = fmt::format("needs {}", w.what.empty() ? item.what : w.what);
    if (!w.why.empty()) {
      problem += fmt::format(" ({})", w.why);
    }
  }
  const bool at_conflict = w.at == ReportAt::kConflict;
  const nlohmann::json got = w.at == ReportAt::kSelectorName ? nlohmann::json(row.name) : conflict;
  throw ConfigError(fmt::format("{}:{}: {} {}; got {}; expected {}",
                                file,
                                at_conflict ? item.pointer : row.selector,
                                row.subject,
                                problem,
                                got.dump(),
                                accepted_of(item)));
}

}  // namespace

std::string or_list(const std::vector<std::string>& values) {
  if (values.size() <= 1) {
    return values.empty() ? std::string() : values.front();
  }
  return fmt::format("{} or {}", fmt::join(values.begin(), values.end() - 1, ", "), values.back());
}

void check_requirements(const std::vector<Declaration>& rows,
                        const RunPlan& plan,
                        const nlohmann::json& config,
                        const std::string& file) {
  const RunFacts facts = facts_of(plan, config);
  for (const Declaration& row : rows) {
    for (const Item& item : items_of(row.requirements)) {
      if (const auto conflict = item.unmet(facts)) {
        refuse(row, item, *conflict, file);
      }
    }
  }
}

nlohmann::json requirements_json(const Requirements& requirements) {
  nlohmann::json out = nlohmann::json::object();
  for (const Item& item : items_of(requirements)) {
    out[item.name] = item.listed;
  }
  return out;
}

std::string requirements_text(const Requirements& requirements) {
  std::vector<std::string> parts;
  for (const Item& item : items_of(requirements)) {
    parts.push_back(item.accepted);
  }
  return fmt::format("{}", fmt::join(parts, "; "));
}

}  // namespace stragglersim::experiments
