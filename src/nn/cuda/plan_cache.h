// One cuDNN execution plan per key (operation, shapes, dtype, layout, fusion), built on first use and
// kept for the life of the process context. On first use the heuristics' engine configurations are
// optionally timed on the real data (autotuning) and the fastest is kept; a deterministic mode excludes
// engines with the NONDETERMINISTIC note; fp32 graphs exclude tensor-core (TF32) and down-converting
// engines unless TF32 is allowed. All plans share one grow-only workspace.
//
// Rank agreement: every rank must run the same kernels. set_agreement() installs a callback that gets
// each new key and this rank's choice (an index into the heuristics' list) and returns the choice to use
// (rank 0's, broadcast by the caller). It is called once per key, in the order the keys first appear,
// which is the same on every rank of an SPMD program. This file needs no MPI.
#pragma once
#include <cuda_runtime_api.h>
#include <cudnn.h>

#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "nn/cuda/cudnn_graph_builder.h"
#include "nn/cuda/device_buffer.h"

namespace sb::cuda {

// A finalized operation graph and everything it refers to.
struct OpGraph {
  cudnn::Arena arena;
  cudnn::Descriptor graph;
  bool fp32_data = false;  // every real tensor is fp32: the TF32 filter applies
};

struct PlanCacheOptions {
  bool autotune = true;         // time the candidates on first use; otherwise take the first that builds
  bool deterministic = false;   // exclude CUDNN_NUMERICAL_NOTE_NONDETERMINISTIC engines
  bool allow_tf32 = true;       // fp32 graphs may use tensor-core (TF32) engines
  int max_candidates = 8;       // engine configurations built and timed per key, at most
  int timing_runs = 3;          // timed executions per candidate (after one warm-up)
  size_t max_workspace = size_t{1} << 30;  // candidates needing more are skipped
};

// What was chosen for one key (for logs and docs/cudnn.md).
struct PlanReport {
  std::string key;
  bool ok = false;          // false: no engine could run this graph (the caller used its fallback)
  int choice = -1;          // index into the heuristics' list
  int heuristics = 0;       // configurations the heuristics proposed
  int built = 0;            // candidates that built a plan
  std::string engine;       // the chosen engine's index and notes
  float ms = 0.0f;          // the chosen candidate's time (autotune only)
  int64_t workspace = 0;    // bytes
  std::string why;          // why no plan, when !ok
};

class PlanCache {
 public:
  // Builds the graph of a key; returns nullopt (with a reason) when cuDNN cannot express it.
  using BuildGraph = std::function<std::optional<OpGraph>(std::string* why)>;
  // (key, this rank's choice or -1) -> the choice every rank uses.
  using Agreement = std::function<int(const std::string& key, int local_choice)>;

  PlanCache(cudnnHandle_t handle, cudaStream_t stream, DeviceBuffer& workspace);
  ~PlanCache();

  void set_options(const PlanCacheOptions& options);  // clears the cache when the options change
  const PlanCacheOptions& options() const { return options_; }
  void set_agreement(Agreement agreement) { agreement_ = std::move(agreement); }

  // Executes the key's plan on the given tensors (uids and their device pointers; by-value tensors take a
  // host pointer). Builds, and on first use autotunes, the plan. Returns false when no engine can run the
  // graph (remembered: later calls return false at once).
  bool run(const std::string& key, const BuildGraph& build, const std::vector<int64_t>& uids,
           const std::vector<void*>& pointers);

  std::vector<PlanReport> reports() const;
  size_t size() const { return entries_.size(); }
  void clear();

 private:
  struct Entry;
  Entry& find_or_build(const std::string& key, const BuildGraph& build, const std::vector<int64_t>* uids,
                       const std::vector<void*>* pointers);
  bool launch(const cudnn::Descriptor& plan, int64_t workspace_bytes, const std::vector<int64_t>& uids,
              const std::vector<void*>& pointers);
  float time_plan(const cudnn::Descriptor& plan, int64_t workspace_bytes, const std::vector<int64_t>& uids,
                  const std::vector<void*>& pointers);

  cudnnHandle_t handle_;
  cudaStream_t stream_;
  DeviceBuffer& workspace_;
  PlanCacheOptions options_;
  Agreement agreement_;
  std::map<std::string, std::unique_ptr<Entry>> entries_;
};

}  // namespace sb::cuda
