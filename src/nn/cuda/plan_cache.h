// One cuDNN execution plan per key (operation, shapes, dtype, layout, fusion), built on first use and
// kept for the life of the process context. On first use the heuristics' engine configurations are built
// on several host threads, optionally timed on the real data (autotuning) and the fastest is kept; a
// deterministic mode excludes engines with the NONDETERMINISTIC note; fp32 graphs exclude tensor-core
// (TF32) and down-converting engines unless TF32 is allowed. The plans run on one handle, on the stream of
// the lane each run names (the compute stream's by default); each lane has its own grow-only workspace, so
// that plans running at once on two streams never share one.
//
// With a store folder, the choices also live on disk (src/nn/plan_store.h, docs/cudnn.md): a key found
// there is rebuilt from its engine and knob choices (or restored from cuDNN's serialised plan) without a
// search or timing, and new choices are saved for later processes.
//
// Rank agreement: every rank must run the same kernels. set_agreement() installs a callback that carries
// one int from rank 0 to every rank (a broadcast by the caller). For each new key it is called with the
// words of this rank's choice (encode_choice: first the number of words after it, then the words) and
// returns rank 0's, one word per call; rank 0's first word decides how many calls follow. Keys come in
// the order they first appear, which is the same on every rank of an SPMD program. This file needs no MPI.
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
#include "nn/plan_store.h"

namespace sb::cuda {

// A stream that plans run on and the workspace that plans running on it use.
struct PlanLane {
  cudaStream_t stream = nullptr;
  DeviceBuffer* workspace = nullptr;
};

// A finalized operation graph and everything it refers to.
struct OpGraph {
  cudnn::Arena arena;
  cudnn::Descriptor graph;
  bool fp32_data = false;  // every real tensor is fp32: the TF32 filter applies
  // A graph whose caller has separate passes to fall back on (a fused graph, conv + bias, the dgrad that
  // adds into dx): for fp32 data it gets no TF32 engine (the rule is never relaxed), so an fp32 run keeps
  // fp32 arithmetic.
  bool has_fallback = false;
  // Autotuning times every configuration both heuristics modes propose, not the first max_candidates: for
  // graphs whose fastest engine the heuristics rank low (the dgrad that adds into dx; docs/cudnn.md).
  bool search_every_config = false;
};

struct PlanCacheOptions {
  bool autotune = true;         // time the candidates on first use; otherwise take the first that builds
  bool deterministic = false;   // exclude CUDNN_NUMERICAL_NOTE_NONDETERMINISTIC engines
  bool allow_tf32 = true;       // fp32 graphs may use tensor-core (TF32) engines
  int max_candidates = 8;       // engine configurations built and timed per key, at most
  // ... of them runtime-compiled, at most: each compiles its kernel when built (0.2 s on an H200 host), and
  // eight took about ten times as long as one, on eight threads (docs/cudnn.md, "Plan search time")
  int max_runtime_compiled = 2;
  bool search_fallback = false; // autotuning also times the fallback mode's configurations (up to as many again)
  int timing_runs = 3;          // timed executions per round at most (fewer for long kernels; fastest_round.h)
  size_t max_workspace = size_t{1} << 30;  // candidates needing more are skipped
  std::string store_folder;     // the on-disk plan cache; empty: none
  int build_threads = 0;        // host threads building candidate plans; 0: the machine's cores, at most 8
};

// What was chosen for one key (for logs and docs/cudnn.md).
struct PlanReport {
  std::string key;
  bool ok = false;          // false: no engine could run this graph (the caller used its fallback)
  int choice = -1;          // the built configuration's index in this process's heuristics list (searched, or
                            // the stored choice found there); -1 when made from the engine and knob numbers
  int heuristics = 0;       // configurations the heuristics proposed (0 on a cache hit: not asked)
  int built = 0;            // candidates that built a plan
  std::string engine;       // the chosen engine's index and notes
  std::string chosen;       // the chosen engine and knob choices, e.g. "eng12{2=3,14=4}"
  bool cached = false;      // found in the on-disk cache: no search, no timing
  bool serialised = false;  // restored from cuDNN's serialised plan (a cache hit of a runtime-compiled engine)
  float ms = 0.0f;          // the chosen candidate's time (autotune; on a hit, the time stored with it)
  double build_s = 0.0;     // host seconds spent on this key: graph, search or cache, timing, agreement
  int64_t workspace = 0;    // bytes
  std::string why;          // why no plan, when !ok
};

class PlanCache {
 public:
  // Builds the graph of a key; returns nullopt (with a reason) when cuDNN cannot express it.
  using BuildGraph = std::function<std::optional<OpGraph>(std::string* why)>;
  // (key, one word of this rank's choice) -> the same word of rank 0's choice (see the file comment).
  using Agreement = std::function<int(const std::string& key, int local_word)>;

  // `compute`: the lane of the stream the handle is bound to, which runs take unless they name another.
  PlanCache(cudnnHandle_t handle, PlanLane compute);
  ~PlanCache();  // saves new choices to the store and logs one summary line
  PlanCache(const PlanCache&) = delete;
  PlanCache& operator=(const PlanCache&) = delete;

  void set_options(const PlanCacheOptions& options);  // clears the cache when the options change
  const PlanCacheOptions& options() const { return options_; }
  void set_agreement(Agreement agreement) { agreement_ = std::move(agreement); }

  // Executes the key's plan on the given tensors (uids and their device pointers; by-value tensors take a
  // host pointer). Builds, and on first use autotunes, the plan. Returns false when no engine can run the
  // graph (remembered: later calls return false at once). `lane`: where it runs (and, on first use, is
  // timed); null: the compute lane.
  bool run(const std::string& key, const BuildGraph& build, const std::vector<int64_t>& uids,
           const std::vector<void*>& pointers, const PlanLane* lane = nullptr);

  std::vector<PlanReport> reports() const;
  size_t size() const { return entries_.size(); }
  // Whether the key was seen: its next run executes its plan once, with no search or timing.
  bool has(const std::string& key) const { return entries_.count(key) > 0; }
  void clear();
  // Writes choices made since the last save to the store (also done every few seconds while plans are
  // built, and on destruction). A store that cannot be written warns once; the run goes on.
  void save();
  const std::string& store_path() const;  // empty without a store

 private:
  struct Entry;
  struct Pick;
  Entry& find_or_build(const std::string& key, const BuildGraph& build, const std::vector<int64_t>* uids,
                       const std::vector<void*>* pointers);
  std::optional<Pick> from_store(Entry& e, const std::string& store_key);
  std::optional<Pick> search(Entry& e, const std::vector<int64_t>* uids, const std::vector<void*>* pointers);
  std::optional<Pick> rebuild(Entry& e, const PlanChoice& choice);
  // The heuristics' own configuration of `choice` for the entry's graph, or nullptr where they no longer
  // propose it. Fills the entry's heuristics list (mode A) on first use.
  const cudnn::Descriptor* proposed_config(Entry& e, const PlanChoice& choice);
  // The configuration to build for `choice`: the heuristics' own where they propose it, else one made from
  // the engine and knob numbers (kept in e.rebuilt); nullptr where cuDNN refuses the numbers.
  const cudnn::Descriptor* config_for(Entry& e, const PlanChoice& choice);
  PlanChoice agree(const std::string& key, const PlanChoice& local);
  std::string store_key(const std::string& key) const;
  bool launch(const cudnn::Descriptor& plan, int64_t workspace_bytes, const std::vector<int64_t>& uids,
              const std::vector<void*>& pointers);
  // Milliseconds per launch (fastest_round.h, candidate_ms), -1 when it fails to run; `fastest_ms`: the
  // fastest candidate's so far (0: none yet).
  float time_plan(const cudnn::Descriptor& plan, int64_t workspace_bytes, const std::vector<int64_t>& uids,
                  const std::vector<void*>& pointers, float fastest_ms);

  cudnnHandle_t handle_;
  PlanLane compute_;
  PlanLane lane_;  // the lane of the run in progress (compute_ between runs)
  PlanCacheOptions options_;
  Agreement agreement_;
  std::map<std::string, std::unique_ptr<Entry>> entries_;
  std::unique_ptr<PlanStore> store_;
  double last_save_s_ = 0.0;  // steady-clock seconds
  int hits_ = 0, misses_ = 0, failed_ = 0;
  double build_s_ = 0.0;
  double timing_s_ = 0.0;  // the part of build_s_ spent timing candidates
};

}  // namespace sb::cuda
