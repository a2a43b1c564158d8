#pragma once
// Op-level timelines of hybrid-parallel training (data × pipeline × tensor parallel): every
// forward/backward micro-batch, pipeline send/recv, gradient reduce-scatter, parameter
// all-gather and optimizer op of each step, as recorded by a Chrome trace-event export (the
// ByteDance timelines of Lin et al., "Understanding Stragglers in Large Model Training Using
// What-if Analysis", OSDI 2025; PyTorch-profiler / Kineto and Megatron timer exports with an
// event-name map) and the job's parallel layout (`meta-*.yaml`). docs/whatif.md.
//
// Units: seconds (the file's microseconds / 10⁶). Ranks: dp (data-parallel replica, 0..dp−1),
// stage (pipeline rank, 0..pp−1), tp (tensor rank; only tensor rank 0 is kept, tensor ranks run
// in lockstep and the ByteDance exports record only rank 0).

#include <cstddef>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace stragglersim::replay {

/// The op types of Megatron-style training the replay knows (the artifact's names).
enum class OpType : std::uint8_t {
  kForwardCompute,
  kBackwardCompute,
  kForwardSend,
  kForwardRecv,
  kBackwardSend,
  kBackwardRecv,
  kParamsAllGather,
  kGradsReduceScatter,
  kSeparateGradsAllReduce,
  kLayernormGradsAllReduce,
  kEmbeddingGradsAllReduce,
  kOptimizerClipMainGrad,
  kOptimizer,
  kGc,
};
inline constexpr int kOpTypes = 14;

/// The ByteDance event name of `type` ("forward-compute", ...).
std::string_view op_type_name(OpType type);
/// Pipeline send/recv.
bool is_pipeline_p2p(OpType type);

/// Event name → op type. `strict`: an event name not in the map is an error (else skipped).
struct OpNameMap {
  std::map<std::string, OpType, std::less<>> names;
  bool strict = false;
};
/// The ByteDance names, each op type under its own name.
OpNameMap bytedance_op_names();
/// The default map plus `extra` (name → ByteDance op name); an unknown op-type name throws
/// TraceFileError "MAP_PATH: /NAME: unknown op type 'X'; got X (expected one of ...)".
OpNameMap op_names_from(const std::map<std::string, std::string>& extra,
                        const std::string& map_path,
                        bool strict);

/// The job's layout: world_size = dp_size · dsp_size · pp_size · tp_size.
struct JobLayout {
  std::string trial_name;
  int dp_size = 1;
  int dsp_size = 1;  ///< context / sequence parallel groups (gradients reduced over dp·dsp)
  int pp_size = 1;
  int tp_size = 1;
  int vpp_size = 1;  ///< model chunks (virtual pipeline stages) per pipeline rank
  int world_size = 1;
};

/// Reads a `meta-*.yaml` (flat `key: value` lines; keys trial_name, run_id, dp_size, dsp_size,
/// pp_size, tp_size, vpp_size, world_size; `#` comments). Throws TraceFileError
/// "PATH:LINE: ..." for a malformed line, an unknown key or a size that is not an integer ≥ 1,
/// and "PATH: world_size ..." when the sizes do not multiply to world_size.
JobLayout read_job_layout(const std::string& path);

struct Op {
  std::int64_t step = 0;
  int dp = 0;
  int stage = 0;
  OpType type = OpType::kForwardCompute;
  int micro_batch = -1;  ///< args.mb_id; −1 when not a micro-batch's compute
  int chunk = 0;         ///< model chunk within the stage (args.model_chunk; −1 read as 0)
  double start = 0.0;    ///< seconds
  double duration = 0.0;
  std::size_t event = 0;  ///< index in the file's event list
};

struct OpTimeline {
  std::string path;
  JobLayout layout;
  /// Sorted by (step, dp, stage, type, start, event).
  std::vector<Op> ops;
  std::vector<std::int64_t> steps;  ///< increasing
  std::size_t skipped_events = 0;   ///< other tensor ranks, unmapped names, metadata
};

/// Reads a Chrome trace (plain or gzip). An op's dp rank is args.dp_rank or the event's pid; its
/// stage args.stage or the "PP rank N, TP rank M, ..." thread_name of its (pid, tid); its tensor
/// rank args.tp_rank or the thread name's (0 without either). Without `layout` the sizes are
/// the ranks seen. Throws TraceFileError for malformed input ("PATH: event N: ...": an event
/// without dur, ts, an integer args.step or a stage; an unmapped name under a strict map) and for
/// a layout that does not match the events (ranks missing, a (step, rank) without its optimizer).
OpTimeline read_op_timeline(const std::string& path,
                            const std::optional<JobLayout>& layout,
                            const OpNameMap& names,
                            const std::string& meta_path = "");

}  // namespace stragglersim::replay
