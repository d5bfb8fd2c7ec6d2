#include "nn/cuda/plan_cache.h"

#include <algorithm>
#include <limits>

#include "core/cuda_check.h"
#include "core/error.h"

namespace sb::cuda {

struct PlanCache::Entry {
  PlanReport report;
  std::optional<OpGraph> graph;
  std::vector<cudnn::Descriptor> configs;  // the heuristics' list (mode A, then the fallback mode's)
  cudnn::Descriptor plan;
  int64_t workspace = 0;
  bool executed = false;  // a plan that was never timed proves itself on its first execution
};

namespace {

struct Candidate {
  int index;
  cudnn::Descriptor plan;
  int64_t workspace;
  std::string engine;
};

// Whether the options exclude an engine for this graph. The determinism rule is strict; the TF32 rule
// can be relaxed (strict_tf32 = false) when no engine satisfies it, which the report then says.
bool excluded(const cudnn::EngineInfo& info, const OpGraph& g, const PlanCacheOptions& o, bool strict_tf32) {
  if (o.deterministic && info.has(CUDNN_NUMERICAL_NOTE_NONDETERMINISTIC)) return true;
  // fp32 data on tensor cores means TF32 (or worse, fp16 down-conversion): only when TF32 is allowed.
  if (strict_tf32 && g.fp32_data && !o.allow_tf32 &&
      (info.has(CUDNN_NUMERICAL_NOTE_TENSOR_CORE) || info.has(CUDNN_NUMERICAL_NOTE_DOWN_CONVERT_INPUTS)))
    return true;
  return false;
}

void append_configs(std::vector<cudnn::Descriptor>& list, const cudnn::Descriptor& graph, cudnnBackendHeurMode_t mode) {
  for (auto& c : cudnn::heuristic_configs(graph, mode)) list.push_back(std::move(c));
}

}  // namespace

PlanCache::PlanCache(cudnnHandle_t handle, cudaStream_t stream, DeviceBuffer& workspace)
    : handle_(handle), stream_(stream), workspace_(workspace) {}

PlanCache::~PlanCache() = default;

void PlanCache::clear() { entries_.clear(); }

void PlanCache::set_options(const PlanCacheOptions& o) {
  const bool same = o.autotune == options_.autotune && o.deterministic == options_.deterministic &&
                    o.allow_tf32 == options_.allow_tf32 && o.max_candidates == options_.max_candidates &&
                    o.timing_runs == options_.timing_runs && o.max_workspace == options_.max_workspace;
  options_ = o;
  if (!same) entries_.clear();
}

bool PlanCache::launch(const cudnn::Descriptor& plan, int64_t workspace_bytes, const std::vector<int64_t>& uids,
                       const std::vector<void*>& pointers) {
  void* ws = workspace_bytes > 0 ? workspace_.ensure(static_cast<size_t>(workspace_bytes)) : workspace_.data();
  const cudnn::Descriptor pack = cudnn::make_variant_pack(uids, pointers, ws);
  return cudnn::execute(handle_, plan, pack) == CUDNN_STATUS_SUCCESS;
}

float PlanCache::time_plan(const cudnn::Descriptor& plan, int64_t workspace_bytes, const std::vector<int64_t>& uids,
                           const std::vector<void*>& pointers) {
  if (!launch(plan, workspace_bytes, uids, pointers)) return -1.0f;  // warm-up, and a check that it runs
  cudaEvent_t start, stop;
  CHECK_CUDA(cudaEventCreate(&start));
  CHECK_CUDA(cudaEventCreate(&stop));
  CHECK_CUDA(cudaEventRecord(start, stream_));
  bool ok = true;
  for (int i = 0; i < options_.timing_runs && ok; ++i) ok = launch(plan, workspace_bytes, uids, pointers);
  CHECK_CUDA(cudaEventRecord(stop, stream_));
  CHECK_CUDA(cudaEventSynchronize(stop));
  float ms = 0.0f;
  CHECK_CUDA(cudaEventElapsedTime(&ms, start, stop));
  CHECK_CUDA(cudaEventDestroy(start));
  CHECK_CUDA(cudaEventDestroy(stop));
  return ok ? ms / static_cast<float>(options_.timing_runs) : -1.0f;
}

PlanCache::Entry& PlanCache::find_or_build(const std::string& key, const BuildGraph& build,
                                           const std::vector<int64_t>* uids, const std::vector<void*>* pointers) {
  if (auto it = entries_.find(key); it != entries_.end()) return *it->second;

  cudaStreamCaptureStatus capturing = cudaStreamCaptureStatusNone;
  CHECK_CUDA(cudaStreamIsCapturing(stream_, &capturing));
  if (capturing != cudaStreamCaptureStatusNone)
    fatal("cuDNN plan for '" + key + "' is first needed inside a CUDA graph capture; run one warm-up step first");

  auto entry = std::make_unique<Entry>();
  Entry& e = *entry;
  e.report.key = key;
  e.graph = build(&e.report.why);
  if (e.graph) {
    append_configs(e.configs, e.graph->graph, CUDNN_HEUR_MODE_A);
    std::vector<Candidate> candidates;
    const int wanted = options_.autotune ? std::max(1, options_.max_candidates) : 1;
    // Mode A first; if nothing of it builds, the fallback mode's list is appended (same order on every
    // rank); if still nothing, the TF32 rule is relaxed rather than failing the graph.
    for (int pass = 0; pass < 3 && candidates.empty(); ++pass) {
      const size_t begin = pass == 1 ? e.configs.size() : 0;
      if (pass == 1) append_configs(e.configs, e.graph->graph, CUDNN_HEUR_MODE_FALLBACK);
      if (pass == 2) e.report.why = "no engine without TF32 for fp32 data: TF32 allowed for this graph";
      for (size_t i = begin; i < e.configs.size() && static_cast<int>(candidates.size()) < wanted; ++i) {
        const cudnn::EngineInfo info = cudnn::engine_info(e.configs[i]);
        if (excluded(info, *e.graph, options_, /*strict_tf32=*/pass < 2)) continue;
        auto plan = cudnn::make_plan(handle_, e.configs[i]);
        if (!plan) continue;
        const int64_t ws = cudnn::plan_workspace_bytes(*plan);
        if (static_cast<size_t>(ws) > options_.max_workspace) continue;
        candidates.push_back({static_cast<int>(i), std::move(*plan), ws, info.str()});
      }
    }
    e.report.heuristics = static_cast<int>(e.configs.size());
    e.report.built = static_cast<int>(candidates.size());

    // Autotune: the fastest candidate on the real data; a candidate that fails to execute is dropped.
    int best = candidates.empty() ? -1 : 0;
    std::vector<float> times(candidates.size(), 0.0f);
    if (options_.autotune && uids && pointers && candidates.size() > 1) {
      float best_ms = std::numeric_limits<float>::max();
      best = -1;
      for (size_t c = 0; c < candidates.size(); ++c) {
        times[c] = time_plan(candidates[c].plan, candidates[c].workspace, *uids, *pointers);
        if (times[c] >= 0.0f && times[c] < best_ms) {
          best_ms = times[c];
          best = static_cast<int>(c);
        }
      }
    }
    int local_choice = best >= 0 ? candidates[static_cast<size_t>(best)].index : -1;
    int choice = agreement_ ? agreement_(key, local_choice) : local_choice;

    if (choice >= 0) {
      int found = -1;
      for (size_t c = 0; c < candidates.size(); ++c)
        if (candidates[c].index == choice) found = static_cast<int>(c);
      if (found < 0) {  // rank 0 chose a configuration this rank did not build: build it now
        if (choice >= static_cast<int>(e.configs.size()))
          fatal("cuDNN plan for '" + key + "': the agreed engine configuration " + std::to_string(choice) +
                " does not exist on this rank (" + std::to_string(e.configs.size()) + " configurations)");
        auto plan = cudnn::make_plan(handle_, e.configs[static_cast<size_t>(choice)]);
        if (!plan) fatal("cuDNN plan for '" + key + "': the agreed engine configuration does not build on this rank");
        const int64_t ws = cudnn::plan_workspace_bytes(*plan);
        candidates.push_back({choice, std::move(*plan), ws, cudnn::engine_info(e.configs[static_cast<size_t>(choice)]).str()});
        times.push_back(0.0f);
        found = static_cast<int>(candidates.size()) - 1;
      }
      Candidate& chosen = candidates[static_cast<size_t>(found)];
      e.plan = std::move(chosen.plan);
      e.workspace = chosen.workspace;
      e.report.ok = true;
      e.report.choice = choice;
      e.report.engine = chosen.engine;
      e.report.ms = times[static_cast<size_t>(found)];
      e.report.workspace = chosen.workspace;
    } else {
      e.report.why = local_choice < 0 ? "no engine configuration builds a plan" : "rank 0 found no engine";
    }
  }
  if (!e.report.ok) e.graph.reset();  // nothing will run it
  return *entries_.emplace(key, std::move(entry)).first->second;
}

bool PlanCache::run(const std::string& key, const BuildGraph& build, const std::vector<int64_t>& uids,
                    const std::vector<void*>& pointers) {
  Entry& e = find_or_build(key, build, &uids, &pointers);
  if (!e.report.ok) return false;
  if (!launch(e.plan, e.workspace, uids, pointers)) {
    if (e.executed)
      fatal("cuDNN execution failed for '" + key + "' with " + e.report.engine + ": " + cudnn::last_error());
    // A plan that builds but cannot execute counts as no engine: the caller's fallback runs instead.
    e.report.ok = false;
    e.report.why = "the plan built but failed to execute: " + cudnn::last_error();
    e.plan = cudnn::Descriptor();
    e.graph.reset();
    return false;
  }
  e.executed = true;
  return true;
}

std::vector<PlanReport> PlanCache::reports() const {
  std::vector<PlanReport> out;
  for (const auto& [key, e] : entries_) out.push_back(e->report);
  return out;
}

}  // namespace sb::cuda
