#include "sim/replay/op_timeline.h"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <charconv>
#include <cmath>
#include <fstream>
#include <nlohmann/json.hpp>
#include <regex>
#include <set>
#include <tuple>
#include <utility>

#include "fit/chrome_trace_json.h"
#include "fit/delay_trace.h"

namespace stragglersim::replay {

namespace {

constexpr std::array<std::string_view, kOpTypes> kOpTypeNames = {
    "forward-compute",
    "backward-compute",
    "forward-send",
    "forward-recv",
    "backward-send",
    "backward-recv",
    "params-all-gather",
    "grads-reduce-scatter",
    "separate-grads-all-reduce",
    "layernorm-grads-all-reduce",
    "embedding-grads-all-reduce",
    "optimizer-clip-main-grad",
    "optimizer",
    "gc",
};

[[noreturn]] void fail_line(const std::string& path, int line, const std::string& message) {
  throw sim::TraceFileError(fmt::format("{}:{}: {}", path, line, message));
}

std::string trimmed(std::string_view text) {
  const auto first = text.find_first_not_of(" \t\r");
  if (first == std::string_view::npos) return {};
  const auto last = text.find_last_not_of(" \t\r");
  return std::string(text.substr(first, last - first + 1));
}

int positive_size(const std::string& path, int line, const std::string& key, const std::string& v) {
  int value = 0;
  const auto [end, ec] = std::from_chars(v.data(), v.data() + v.size(), value);
  if (ec != std::errc() || end != v.data() + v.size() || value < 1) {
    fail_line(
        path, line, fmt::format("{} is not an integer ≥ 1; got '{}' (expected a size)", key, v));
  }
  return value;
}

/// Sets `key` of a meta file's line `number` to `value`.
void set_layout_key(JobLayout& layout,
                    const std::string& path,
                    int number,
                    const std::string& key,
                    const std::string& value) {
  static const std::map<std::string, int JobLayout::*> sizes = {
      {"dp_size", &JobLayout::dp_size},
      {"dsp_size", &JobLayout::dsp_size},
      {"pp_size", &JobLayout::pp_size},
      {"tp_size", &JobLayout::tp_size},
      {"vpp_size", &JobLayout::vpp_size},
      {"world_size", &JobLayout::world_size}};
  if (key == "trial_name") {
    layout.trial_name = value;
  } else if (key == "run_id") {
    if (value.empty() || value.find_first_not_of("0123456789") != std::string::npos) {
      fail_line(
          path,
          number,
          fmt::format("run_id is not an integer ≥ 0; got '{}' (expected a run number)", value));
    }
  } else if (const auto at = sizes.find(key); at != sizes.end()) {
    layout.*(at->second) = positive_size(path, number, key, value);
  } else {
    fail_line(path,
              number,
              fmt::format("unknown key '{}' (expected one of: dp_size, dsp_size, pp_size, run_id, "
                          "tp_size, trial_name, vpp_size, world_size)",
                          key));
  }
}

/// Rank fields of one (pid, tid) from its thread_name metadata.
struct ThreadRank {
  int stage = 0;
  int tp = 0;
};

std::map<std::pair<std::int64_t, std::int64_t>, ThreadRank> thread_ranks(
    const nlohmann::json& events) {
  static const std::regex name_pattern(R"(PP rank (\d+), TP rank (\d+))");
  std::map<std::pair<std::int64_t, std::int64_t>, ThreadRank> out;
  for (const nlohmann::json& e : events) {
    if (!e.is_object() || e.value("ph", "") != "M" || e.value("name", "") != "thread_name") {
      continue;
    }
    const auto pid = e.find("pid");
    const auto tid = e.find("tid");
    const auto args = e.find("args");
    if (pid == e.end() || tid == e.end() || !pid->is_number_integer() ||
        !tid->is_number_integer() || args == e.end() || !args->is_object() ||
        !args->contains("name") || !(*args)["name"].is_string()) {
      continue;
    }
    std::smatch m;
    const std::string name = (*args)["name"].get<std::string>();
    if (std::regex_search(name, m, name_pattern)) {
      out[{pid->get<std::int64_t>(), tid->get<std::int64_t>()}] = {std::stoi(m[1].str()),
                                                                   std::stoi(m[2].str())};
    }
  }
  return out;
}

int rank_field(const std::string& path,
               std::size_t n,
               const nlohmann::json& args,
               const char* key,
               std::optional<int> fallback,
               const char* expected) {
  if (args.contains(key)) {
    const std::int64_t v = sim::integer_field(path, n, args, key, key, expected);
    if (v < 0 || v > 1'000'000) {
      sim::fail_at_event(
          path, n, fmt::format("'{}' out of range; got {} (expected {})", key, v, expected));
    }
    return static_cast<int>(v);
  }
  if (!fallback) {
    sim::fail_at_event(path, n, fmt::format("no '{}' (expected {})", key, expected));
  }
  return *fallback;
}

// Collectives drawn as their transfer (start = end − transfer) carry the ranks' clock skew: the
// ByteDance SE timeline has transfers of −75 µs. Down to −10 ms (the artifact's tolerance) a
// negative dur is skew, kept as recorded (the replay's transfer time is clamped at 0).
constexpr double kSkewMicroseconds = 1e4;

double op_duration(const std::string& path, std::size_t n, const nlohmann::json& e) {
  constexpr const char* kExpected = "a duration ≥ −10000 in microseconds";
  const auto at = e.find("dur");
  if (at == e.end()) sim::fail_at_event(path, n, fmt::format("no 'dur' (expected {})", kExpected));
  if (!at->is_number() || !std::isfinite(at->get<double>()) ||
      at->get<double>() < -kSkewMicroseconds) {
    sim::fail_at_event(
        path,
        n,
        fmt::format(
            "'dur' is not a number ≥ −10000; got {} (expected {})", sim::shown(*at), kExpected));
  }
  return at->get<double>() / 1e6;
}

struct EventContext {
  const std::string& path;
  const OpNameMap& names;
  const std::map<std::pair<std::int64_t, std::int64_t>, ThreadRank>& threads;
};

/// Sets op's dp rank and stage from args or the pid and thread name; returns its tensor rank.
int read_ranks(const EventContext& c,
               std::size_t n,
               const nlohmann::json& e,
               const nlohmann::json& args,
               Op& op) {
  std::optional<int> pid;
  if (e.contains("pid") && e["pid"].is_number_integer()) pid = e["pid"].get<int>();
  std::optional<ThreadRank> thread;
  if (pid && e.contains("tid") && e["tid"].is_number_integer()) {
    const auto at = c.threads.find({*pid, e["tid"].get<std::int64_t>()});
    if (at != c.threads.end()) thread = at->second;
  }
  op.dp =
      rank_field(c.path, n, args, "dp_rank", pid, "the data-parallel rank (args.dp_rank or pid)");
  op.stage = rank_field(c.path,
                        n,
                        args,
                        "stage",
                        thread ? std::optional<int>(thread->stage) : std::nullopt,
                        "the pipeline stage (args.stage or a thread_name 'PP rank N, TP rank M')");
  return rank_field(
      c.path, n, args, "tp_rank", thread ? thread->tp : 0, "the tensor rank (args.tp_rank)");
}

/// Op of event n, or nothing for an event that is not a mapped complete event of tensor rank 0.
std::optional<Op> read_op(const EventContext& c, std::size_t n, const nlohmann::json& e) {
  if (!e.is_object()) {
    sim::fail_at_event(
        c.path,
        n,
        fmt::format("not an object; got {} (expected a trace event object)", sim::shown(e)));
  }
  const auto ph = e.find("ph");
  if (ph == e.end() || *ph != "X") return std::nullopt;
  const auto name = e.find("name");
  if (name == e.end() || !name->is_string()) {
    sim::fail_at_event(c.path, n, "no 'name' string (expected the op's event name)");
  }
  const auto type = c.names.names.find(name->get<std::string>());
  if (type == c.names.names.end()) {
    if (!c.names.strict) return std::nullopt;
    sim::fail_at_event(c.path,
                       n,
                       fmt::format("unknown op name '{}' under a strict map (expected one of the "
                                   "map's names)",
                                   name->get<std::string>()));
  }
  Op op;
  op.type = type->second;
  op.event = n;
  op.duration = op_duration(c.path, n, e);
  const auto ts = e.find("ts");
  if (ts == e.end() || !ts->is_number() || !std::isfinite(ts->get<double>())) {
    sim::fail_at_event(c.path,
                       n,
                       fmt::format("'ts' is not a number; got {} (expected a start time in "
                                   "microseconds)",
                                   ts == e.end() ? std::string("nothing") : sim::shown(*ts)));
  }
  op.start = ts->get<double>() / 1e6;
  const auto args = e.find("args");
  if (args == e.end() || !args->is_object()) {
    sim::fail_at_event(c.path, n, "no 'args' object (expected args.step, the integer step number)");
  }
  op.step = sim::integer_field(c.path, n, *args, "step", "args.step", "the integer step number");
  if (read_ranks(c, n, e, *args, op) != 0) return std::nullopt;
  if (args->contains("mb_id") && (*args)["mb_id"].is_number_integer()) {
    op.micro_batch = (*args)["mb_id"].get<int>();
  }
  if (args->contains("model_chunk") && (*args)["model_chunk"].is_number_integer()) {
    op.chunk = std::max(0, (*args)["model_chunk"].get<int>());
  }
  return op;
}

std::string rank_list(const std::set<int>& ranks) {
  return ranks.empty()
             ? std::string("none")
             : fmt::format("{} ranks {}..{}", ranks.size(), *ranks.begin(), *ranks.rbegin());
}

void check_layout(const OpTimeline& t, const std::string& meta_path) {
  std::set<int> dps;
  std::set<int> stages;
  for (const Op& op : t.ops) {
    dps.insert(op.dp);
    stages.insert(op.stage);
  }
  const auto mismatch =
      [&](const char* what, const std::set<int>& seen, int size, const char* key) {
        const bool contiguous = !seen.empty() && *seen.begin() == 0 && *seen.rbegin() == size - 1;
        if (static_cast<int>(seen.size()) != size || !contiguous) {
          sim::fail_file(
              t.path,
              fmt::format("the layout does not match the events: {} ranks seen {}; got {} "
                          "= {} in {} (expected ranks 0..{} = {} − 1)",
                          what,
                          rank_list(seen),
                          key,
                          size,
                          meta_path.empty() ? std::string("the layout") : meta_path,
                          size - 1,
                          key));
        }
      };
  mismatch("data-parallel", dps, t.layout.dp_size, "dp_size");
  mismatch("pipeline", stages, t.layout.pp_size, "pp_size");
  // Every (step, dp, stage) needs its optimizer op (the step's end) and forward computes.
  std::set<std::tuple<std::int64_t, int, int, OpType>> present;
  for (const Op& op : t.ops) present.insert({op.step, op.dp, op.stage, op.type});
  for (const std::int64_t step : t.steps) {
    for (int dp = 0; dp < t.layout.dp_size; ++dp) {
      for (int stage = 0; stage < t.layout.pp_size; ++stage) {
        for (const OpType type : {OpType::kOptimizer, OpType::kForwardCompute}) {
          if (!present.contains({step, dp, stage, type})) {
            sim::fail_file(
                t.path,
                fmt::format("the layout does not match the events: step {} has no {} "
                            "op on data-parallel rank {}, stage {} (expected {} on "
                            "every rank)",
                            step,
                            op_type_name(type),
                            dp,
                            stage,
                            type == OpType::kOptimizer ? "one per step" : "one per micro-batch"));
          }
        }
      }
    }
  }
}

}  // namespace

std::string_view op_type_name(OpType type) { return kOpTypeNames[static_cast<std::size_t>(type)]; }

bool is_pipeline_p2p(OpType type) {
  return type == OpType::kForwardSend || type == OpType::kForwardRecv ||
         type == OpType::kBackwardSend || type == OpType::kBackwardRecv;
}

OpNameMap bytedance_op_names() {
  OpNameMap map;
  for (int k = 0; k < kOpTypes; ++k) {
    map.names.emplace(std::string(kOpTypeNames[static_cast<std::size_t>(k)]),
                      static_cast<OpType>(k));
  }
  return map;
}

OpNameMap op_names_from(const std::map<std::string, std::string>& extra,
                        const std::string& map_path,
                        bool strict) {
  OpNameMap map = bytedance_op_names();
  map.strict = strict;
  for (const auto& [event_name, type_name] : extra) {
    const auto* const at = std::find(kOpTypeNames.begin(), kOpTypeNames.end(), type_name);
    if (at == kOpTypeNames.end()) {
      throw sim::TraceFileError(
          fmt::format("{}:/{}: unknown op type '{}'; got {} (expected one of: {})",
                      map_path,
                      event_name,
                      type_name,
                      type_name,
                      fmt::join(kOpTypeNames, ", ")));
    }
    map.names[event_name] = static_cast<OpType>(at - kOpTypeNames.begin());
  }
  return map;
}

JobLayout read_job_layout(const std::string& path) {
  std::ifstream in(path);
  if (!in) fail_line(path, 0, "cannot open file (expected a readable meta YAML file)");
  JobLayout layout;
  std::string line;
  int number = 0;
  std::set<std::string> seen;
  while (std::getline(in, line)) {
    ++number;
    const std::string text = trimmed(line.substr(0, line.find('#')));
    if (text.empty()) continue;
    const auto colon = text.find(':');
    if (colon == std::string::npos) {
      fail_line(path,
                number,
                fmt::format("not a 'key: value' line; got '{}' (expected key: value)", text));
    }
    const std::string key = trimmed(std::string_view(text).substr(0, colon));
    const std::string value = trimmed(std::string_view(text).substr(colon + 1));
    if (!seen.insert(key).second) {
      fail_line(path, number, fmt::format("repeated key '{}' (expected each key once)", key));
    }
    set_layout_key(layout, path, number, key, value);
  }
  const long product =
      static_cast<long>(layout.dp_size) * layout.dsp_size * layout.pp_size * layout.tp_size;
  if (product != layout.world_size) {
    sim::fail_file(
        path,
        fmt::format("world_size is not dp_size · dsp_size · pp_size · tp_size; got {} "
                    "≠ {}·{}·{}·{} = {} (expected sizes that multiply to the world size)",
                    layout.world_size,
                    layout.dp_size,
                    layout.dsp_size,
                    layout.pp_size,
                    layout.tp_size,
                    product));
  }
  return layout;
}

OpTimeline read_op_timeline(const std::string& path,
                            const std::optional<JobLayout>& layout,
                            const OpNameMap& names,
                            const std::string& meta_path) {
  OpTimeline t;
  t.path = path;
  {
    const nlohmann::json doc = sim::parse_trace_json(path, sim::read_maybe_gzip(path));
    const nlohmann::json& events = sim::event_list(path, doc);
    const auto threads = thread_ranks(events);
    const EventContext context{path, names, threads};
    t.ops.reserve(events.size());
    for (std::size_t n = 0; n < events.size(); ++n) {
      if (auto op = read_op(context, n, events[n])) {
        t.ops.push_back(*op);
      } else {
        ++t.skipped_events;
      }
    }
  }
  if (t.ops.empty()) {
    sim::fail_file(path, "no op events (expected complete events named as the op map says)");
  }
  std::sort(t.ops.begin(), t.ops.end(), [](const Op& a, const Op& b) {
    return std::tie(a.step, a.dp, a.stage, a.type, a.start, a.event) <
           std::tie(b.step, b.dp, b.stage, b.type, b.start, b.event);
  });
  for (const Op& op : t.ops) {
    if (t.steps.empty() || t.steps.back() != op.step) t.steps.push_back(op.step);
  }
  if (layout) {
    t.layout = *layout;
  } else {
    for (const Op& op : t.ops) {
      t.layout.dp_size = std::max(t.layout.dp_size, op.dp + 1);
      t.layout.pp_size = std::max(t.layout.pp_size, op.stage + 1);
    }
    t.layout.world_size = t.layout.dp_size * t.layout.pp_size;
  }
  check_layout(t, meta_path);
  return t;
}

}  // namespace stragglersim::replay
