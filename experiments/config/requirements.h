#pragma once
// What a plug-in combines with (docs/plugins.md "Requirements"): a stopping rule, a code or a
// backend row declares, as plain data, what the rest of the run must be for it to work (data,
// the simulated clock, a code kind, no rescale, ...), and one checker, check_requirements,
// compares every declared requirement with the planned run after every block has been read. The
// refusal is written from the row and the requirement:
//   <file>:<pointer>: <subject> <problem>; got <value>; expected <accepted>
// where the subject names the row ("the anytime rule", "code 'dynamic_frc'"), the problem is
// "needs <what>[ (<why>)]" unless the row words it, and the accepted values follow from the
// requirement. A new rule, code, backend or aggregation is then one file plus one row: the
// planner has no combination check of its own.

#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace stragglersim::experiments {

struct RunPlan;

/// Where a refusal is reported and which value it shows as "got".
enum class ReportAt {
  kSelector,      ///< the declaring row's selector (/stopping/rule); got: the conflicting value
  kSelectorName,  ///< the declaring row's selector; got: the row's own name
  kConflict,      ///< the conflicting key (/backend/inject, /code/kind); got: its value
};

/// How one requirement's refusal reads; an empty field takes the requirement's default.
struct Wording {
  /// Replaces the requirement's noun in "needs <what>" ("gradient descent" for optimizer gd).
  std::string what = {};
  /// Why the row asks it, in parentheses after the noun ("it weights by counts itself").
  std::string why = {};
  /// Replaces the whole "needs <what> (<why>)" ("has no erasure probability to rescale by").
  std::string problem = {};
  /// Replaces the accepted values derived from the requirement.
  std::string accepted = {};
  ReportAt at = ReportAt::kSelector;
};

/// A yes/no requirement (the row needs data, the simulated clock, ...).
struct Flag {
  Wording wording = {};
};

/// A requirement that the run's choice of some block is one of `values` (config names: code
/// kinds, optimizer kinds, straggler policies, rescale values).
struct OneOf {
  std::vector<std::string> values = {};
  Wording wording = {};
};

/// A requirement on a count (partitions per worker).
struct Count {
  int value = 1;
  Wording wording = {};
};

/// Everything a row may require of the run, checked in this order (the first unmet one is
/// reported). An absent member is no requirement.
struct Requirements {
  /// How messages name the row; empty: its table's ("the <name> rule", "code '<name>'", "the
  /// <name> backend").
  std::string subject = {};
  std::optional<Flag> needs_data = {};              ///< a data object ("data": null refused), /data
  std::optional<OneOf> codes = {};                  ///< the code kind, /code/kind
  std::optional<Count> partitions_per_worker = {};  ///< k = value · n partitions, /partitions
  std::optional<Flag> needs_simulated_clock = {};   ///< a backend not real_time, /backend/kind
  std::optional<OneOf> optimizer = {};              ///< the optimizer kind, /optimizer/kind
  std::optional<Flag> no_minibatch = {};            ///< no optimizer.batch, /optimizer/batch
  std::optional<OneOf> straggler_policy = {};       ///< "stragglers", /stragglers
  std::optional<OneOf> rescale = {};                ///< "rescale", /rescale
  std::optional<Flag> injected_delays = {};  ///< the backend injects the delays, /backend/inject
  std::optional<Flag> no_faults = {};        ///< no backend faults, /backend/faults
  std::optional<Flag> no_network = {};       ///< no "network" block, /network
  std::optional<Flag> synchronous = {};  ///< a rule not of the asynchronous loop, /stopping/rule
};

/// A row of some table with its requirements, as the checker sees it.
struct Declaration {
  std::string selector;  ///< JSON pointer of the row's selector: "/stopping/rule", "/code/kind"
  std::string subject;   ///< the row's name in messages (Requirements::subject, else the table's)
  std::string name;      ///< the row's name ("anytime")
  Requirements requirements;
};

/// The declaration of `row` (a factory or backend row) selected at `selector`; `subject` is the
/// table's way of naming a row, with "{}" for its name, used when the row gives none.
template <typename Row>
Declaration declaration_of(const Row& row, std::string selector, std::string_view subject) {
  std::string named = row.requirements.subject;
  if (named.empty()) {
    named = std::string(subject);
    named.replace(named.find("{}"), 2, row.name);
  }
  return {std::move(selector), std::move(named), row.name, row.requirements};
}

/// "a", "a or b", "a, b or c": the accepted values of a message.
[[nodiscard]] std::string or_list(const std::vector<std::string>& values);

/// Refuses (ConfigError, exit status 2) the first requirement of `rows`, in their order, that
/// the planned run does not meet; `config` is the run's config as given, for the values shown.
void check_requirements(const std::vector<Declaration>& rows,
                        const RunPlan& plan,
                        const nlohmann::json& config,
                        const std::string& file);

/// The requirements as `stragglersim list --json` shows them: each present one by its name,
/// flags as true, OneOf as its values, Count as its value; an empty object for none.
[[nodiscard]] nlohmann::json requirements_json(const Requirements& requirements);

/// The accepted values of every present requirement, in order, joined by "; " ("" for none):
/// what the JSON Schema's descriptions say a row requires.
[[nodiscard]] std::string requirements_text(const Requirements& requirements);

}  // namespace stragglersim::experiments
