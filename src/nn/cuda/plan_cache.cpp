#include "nn/cuda/plan_cache.h"

#include <algorithm>
#include <chrono>
#include <exception>
#include <limits>
#include <thread>

#include "core/build_info.h"
#include "core/cuda_check.h"
#include "core/error.h"
#include "core/log.h"
#include "nn/cuda/fastest_round.h"

namespace sb::cuda {

struct PlanCache::Entry {
  PlanReport report;
  std::optional<OpGraph> graph;
  std::vector<cudnn::Descriptor> configs;  // the heuristics' list (mode A, then the fallback mode's)
  std::optional<cudnn::EngineConfig> rebuilt;  // a configuration made from a stored or agreed choice
  bool fallback_listed = false;  // the fallback mode's list has been appended to configs
  cudnn::Descriptor plan;
  int64_t workspace = 0;
  bool executed = false;  // a plan that was never timed proves itself on its first execution
};

// A plan chosen for a key, with what the report and the store need to know about it.
struct PlanCache::Pick {
  PlanChoice choice;
  cudnn::Descriptor plan;
  int64_t workspace = 0;
  std::string engine;
  bool rtc = false;  // a runtime-compiled engine: its plan can be serialised
  int index = -1;    // in the heuristics' list; -1 for a configuration made from the numbers
  float ms = 0.0f;
  bool cached = false;
  bool serialised = false;
};

namespace {

constexpr double kSaveEveryS = 10.0;  // while plans are being built, new choices reach the disk this often

double now_s() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

struct Candidate {
  int index;
  cudnn::Descriptor plan;
  int64_t workspace;
  cudnn::EngineInfo info;
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

bool same_engine_and_knobs(const PlanChoice& a, const PlanChoice& b) { return a.engine == b.engine && a.knobs == b.knobs; }

// The fallback mode's configurations that the list does not hold yet (same engine and knobs).
void append_new_configs(std::vector<cudnn::Descriptor>& list, const cudnn::Descriptor& graph,
                        cudnnBackendHeurMode_t mode) {
  std::vector<PlanChoice> known;
  known.reserve(list.size());
  for (const cudnn::Descriptor& c : list) known.push_back(cudnn::engine_choice(c));
  for (auto& c : cudnn::heuristic_configs(graph, mode)) {
    const PlanChoice choice = cudnn::engine_choice(c);
    const auto held = [&](const PlanChoice& k) { return same_engine_and_knobs(k, choice); };
    if (std::none_of(known.begin(), known.end(), held)) list.push_back(std::move(c));
  }
}

// The choice of list[index], with its occurrence: how many configurations before it in the list have the
// same engine and knobs.
PlanChoice choice_at(const std::vector<cudnn::Descriptor>& list, size_t index) {
  PlanChoice choice = cudnn::engine_choice(list[index]);
  for (size_t i = 0; i < index; ++i) {
    if (same_engine_and_knobs(cudnn::engine_choice(list[i]), choice)) ++choice.occurrence;
  }
  return choice;
}

// The configuration of the list with the choice's engine, knobs and occurrence; failing that, the first
// with its engine and knobs (a list that changed since the choice was made); nullptr when none has them.
const cudnn::Descriptor* find_config(const std::vector<cudnn::Descriptor>& list, const PlanChoice& choice) {
  const cudnn::Descriptor* first = nullptr;
  int64_t seen = 0;
  for (const cudnn::Descriptor& c : list) {
    if (!same_engine_and_knobs(cudnn::engine_choice(c), choice)) continue;
    if (seen++ == choice.occurrence) return &c;
    if (!first) first = &c;
  }
  return first;
}

// The position of `config` in the entry's heuristics list, or -1 (a configuration made from the numbers).
int list_index(const std::vector<cudnn::Descriptor>& list, const cudnn::Descriptor* config) {
  for (size_t i = 0; i < list.size(); ++i)
    if (&list[i] == config) return static_cast<int>(i);
  return -1;
}

int build_threads(const PlanCacheOptions& o) {
  if (o.build_threads > 0) return o.build_threads;
  return static_cast<int>(std::clamp(std::thread::hardware_concurrency(), 1u, 8u));
}

// Runs work(0..n-1) on n host threads, each with this thread's CUDA device current (plans may compile
// kernels for it). An exception on a worker is rethrown here.
template <class Work>
void on_threads(size_t n, const Work& work) {
  if (n <= 1) {
    if (n == 1) work(size_t{0});
    return;
  }
  int device = 0;
  CHECK_CUDA(cudaGetDevice(&device));
  std::vector<std::exception_ptr> errors(n);
  std::vector<std::thread> threads;
  threads.reserve(n);
  for (size_t i = 0; i < n; ++i)
    threads.emplace_back([&, i] {
      try {
        CHECK_CUDA(cudaSetDevice(device));
        work(i);
      } catch (...) {
        errors[i] = std::current_exception();
      }
    });
  for (auto& t : threads) t.join();
  for (auto& e : errors)
    if (e) std::rethrow_exception(e);
}

// The build whose serialised plans this process may use: one identified by a clean commit only (a
// serialised plan embeds the operation graph, which another build of the code may make differently).
std::string serialising_build() {
  const std::string sha = build_git_sha();
  if (sha.empty() || sha == "unknown" || sha.find("dirty") != std::string::npos) return "";
  return sha;
}

DeviceIdentity current_device_identity() {
  int device = 0, driver = 0, runtime = 0;
  CHECK_CUDA(cudaGetDevice(&device));
  cudaDeviceProp prop{};
  CHECK_CUDA(cudaGetDeviceProperties(&prop, device));
  CHECK_CUDA(cudaDriverGetVersion(&driver));
  CHECK_CUDA(cudaRuntimeGetVersion(&runtime));
  DeviceIdentity id;
  id.gpu = prop.name;
  id.sm_count = prop.multiProcessorCount;
  id.compute_capability = prop.major * 10 + prop.minor;
  id.driver = driver;
  id.cuda_runtime = runtime;
  id.cudnn = static_cast<int64_t>(cudnnGetVersion());
  return id;
}


// What builds the candidate plans of one graph: the handle, the options, the graph and its heuristics
// list.
struct CandidateBuild {
  cudnnHandle_t handle;
  const PlanCacheOptions& options;
  const std::vector<cudnn::Descriptor>& configs;
  const OpGraph& graph;
};

// The configurations of the list from `begin` on that the options allow, in the heuristics' order;
// runtime-compiled ones count against max_runtime_compiled with those already built.
std::vector<std::pair<size_t, cudnn::EngineInfo>> eligible_configs(const CandidateBuild& b, size_t begin, bool strict_tf32,
                                                                    const std::vector<Candidate>& candidates) {
  std::vector<std::pair<size_t, cudnn::EngineInfo>> eligible;
  int compiled = 0;
  for (const Candidate& c : candidates) compiled += c.info.has(CUDNN_BEHAVIOR_NOTE_RUNTIME_COMPILATION) ? 1 : 0;
  for (size_t i = begin; i < b.configs.size(); ++i) {
    cudnn::EngineInfo info = cudnn::engine_info(b.configs[i]);
    if (excluded(info, b.graph, b.options, strict_tf32)) continue;
    if (info.has(CUDNN_BEHAVIOR_NOTE_RUNTIME_COMPILATION) && compiled++ >= std::max(1, b.options.max_runtime_compiled))
      continue;
    eligible.emplace_back(i, std::move(info));
  }
  return eligible;
}

// Builds the eligible configurations from index `begin` on, a batch at a time, one thread each, in the
// heuristics' order, until `limit` candidates are built.
void build_candidates(const CandidateBuild& b, size_t begin, bool strict_tf32, size_t limit, std::vector<Candidate>& candidates) {
  auto eligible = eligible_configs(b, begin, strict_tf32, candidates);
  const size_t threads = static_cast<size_t>(build_threads(b.options));
  for (size_t next = 0; next < eligible.size() && candidates.size() < limit;) {
    const size_t batch = std::min({eligible.size() - next, limit - candidates.size(), threads});
    std::vector<std::optional<cudnn::Descriptor>> plans(batch);
    on_threads(batch, [&](size_t k) { plans[k] = cudnn::make_plan(b.handle, b.configs[eligible[next + k].first]); });
    for (size_t k = 0; k < batch; ++k) {
      if (!plans[k]) continue;
      const int64_t ws = cudnn::plan_workspace_bytes(*plans[k]);
      if (static_cast<size_t>(ws) > b.options.max_workspace) continue;
      candidates.push_back({static_cast<int>(eligible[next + k].first), std::move(*plans[k]), ws,
                            std::move(eligible[next + k].second)});
    }
    next += batch;
  }
}

// The index of the fastest candidate by `time` (milliseconds per launch, -1 when it fails to run; it is
// given the fastest time so far, 0 for none), and its time; -1 when none runs.
template <class Time>
int fastest_candidate(const std::vector<Candidate>& candidates, const Time& time, float& best_ms) {
  int best = -1;
  best_ms = std::numeric_limits<float>::max();
  for (size_t c = 0; c < candidates.size(); ++c) {
    const float ms = time(candidates[c], best < 0 ? 0.0f : best_ms);
    if (ms >= 0.0f && ms < best_ms) {
      best_ms = ms;
      best = static_cast<int>(c);
    }
  }
  return best;
}

// The store's record of a newly chosen plan; a runtime-compiled plan is kept serialised where this build
// can serialise it.
PlanRecord record_of(const PlanChoice& choice, bool tuned, float ms, bool rtc, const cudnn::Descriptor& plan) {
  PlanRecord record;
  record.choice = choice;
  record.tuned = tuned;
  record.ms = ms;
  record.plan_build = rtc ? serialising_build() : "";
  if (!record.plan_build.empty()) record.plan = cudnn::plan_json(plan);
  if (record.plan.empty()) record.plan_build.clear();
  return record;
}

}  // namespace

PlanCache::PlanCache(cudnnHandle_t handle, PlanLane compute)
    : handle_(handle), compute_(compute), lane_(compute), last_save_s_(now_s()) {}

PlanCache::~PlanCache() {
  // Failures here must not end the job: the store already turns its own into a warning.
  try {
    save();
    if (hits_ + misses_ + failed_ > 0)
      log_all("cuDNN plans: %d from the plan cache, %d searched, %d without an engine, %.1f s building, %.1f s of it "
              "timing candidates (%s)\n",
              hits_, misses_, failed_, build_s_, timing_s_, store_ ? store_->path().c_str() : "no plan cache");
  } catch (...) {
  }
}

void PlanCache::clear() { entries_.clear(); }

const std::string& PlanCache::store_path() const {
  static const std::string none;
  return store_ ? store_->path() : none;
}

void PlanCache::save() {
  if (store_) store_->save();
  last_save_s_ = now_s();
}

void PlanCache::set_options(const PlanCacheOptions& o) {
  const bool same = o.autotune == options_.autotune && o.deterministic == options_.deterministic &&
                    o.allow_tf32 == options_.allow_tf32 && o.max_candidates == options_.max_candidates &&
                    o.search_fallback == options_.search_fallback &&
                    o.max_runtime_compiled == options_.max_runtime_compiled &&
                    o.timing_runs == options_.timing_runs && o.max_workspace == options_.max_workspace &&
                    o.store_folder == options_.store_folder;
  if (!same) entries_.clear();
  if (o.store_folder != options_.store_folder || (!store_ && !o.store_folder.empty())) {
    save();
    store_.reset();
    if (!o.store_folder.empty())
      store_ = std::make_unique<PlanStore>(o.store_folder, current_device_identity().str());
  }
  options_ = o;
}

std::string PlanCache::store_key(const std::string& key) const {
  // The options that filter engines are part of what a stored choice answers.
  return key + "|det=" + (options_.deterministic ? "1" : "0") + "|tf32=" + (options_.allow_tf32 ? "1" : "0");
}

bool PlanCache::launch(const cudnn::Descriptor& plan, int64_t workspace_bytes, const std::vector<int64_t>& uids,
                       const std::vector<void*>& pointers) {
  DeviceBuffer& workspace = *lane_.workspace;
  void* ws = workspace_bytes > 0 ? workspace.ensure(static_cast<size_t>(workspace_bytes)) : workspace.data();
  const cudnn::Descriptor pack = cudnn::make_variant_pack(uids, pointers, ws);
  // The handle executes on its stream: bound to another lane's for this one call, then back, since other
  // cuDNN calls on the handle (the legacy batch norm) expect the compute stream.
  const bool other_stream = lane_.stream != compute_.stream;
  if (other_stream) CHECK_CUDNN(cudnnSetStream(handle_, lane_.stream));
  const cudnnStatus_t status = cudnn::execute(handle_, plan, pack);
  if (other_stream) CHECK_CUDNN(cudnnSetStream(handle_, compute_.stream));
  return status == CUDNN_STATUS_SUCCESS;
}

float PlanCache::time_plan(const cudnn::Descriptor& plan, int64_t workspace_bytes, const std::vector<int64_t>& uids,
                           const std::vector<void*>& pointers, float fastest_ms) {
  const double start = now_s();
  const float drop_over = fastest_ms > 0.0f ? kDropSlowerThan * fastest_ms : 0.0f;
  const std::optional<float> ms = candidate_ms(lane_.stream, options_.timing_runs, drop_over,
                                               [&] { return launch(plan, workspace_bytes, uids, pointers); });
  timing_s_ += now_s() - start;
  return ms ? *ms : -1.0f;
}

const cudnn::Descriptor* PlanCache::proposed_config(Entry& e, const PlanChoice& choice) {
  if (e.configs.empty()) append_configs(e.configs, e.graph->graph, CUDNN_HEUR_MODE_A);
  if (const cudnn::Descriptor* c = find_config(e.configs, choice)) return c;
  // A choice that the fallback list proposed, when the search also timed that list.
  if (options_.search_fallback && !e.fallback_listed) {
    e.fallback_listed = true;
    append_new_configs(e.configs, e.graph->graph, CUDNN_HEUR_MODE_FALLBACK);
    return find_config(e.configs, choice);
  }
  return nullptr;
}

// A configuration made from the engine and knob numbers alone builds, but its plan can run far slower than
// the heuristics' configuration with the same engine and knobs (on an H100 the wrn step fell from 20k to
// 11k img/s with every plan made so): the heuristics' own is taken wherever they still propose the choice.
const cudnn::Descriptor* PlanCache::config_for(Entry& e, const PlanChoice& choice) {
  if (const cudnn::Descriptor* proposed = proposed_config(e, choice)) return proposed;
  e.rebuilt = cudnn::make_engine_config(e.graph->graph, choice);
  return e.rebuilt ? &e.rebuilt->config : nullptr;
}

// The plan of a choice; empty when this cuDNN refuses the choice for the graph or the options exclude its
// engine.
std::optional<PlanCache::Pick> PlanCache::rebuild(Entry& e, const PlanChoice& choice) {
  const cudnn::Descriptor* config = config_for(e, choice);
  if (!config) return std::nullopt;
  const cudnn::EngineInfo info = cudnn::engine_info(*config);
  if (excluded(info, *e.graph, options_, /*strict_tf32=*/e.graph->has_fallback)) return std::nullopt;
  auto plan = cudnn::make_plan(handle_, *config);
  if (!plan) return std::nullopt;
  Pick p;
  p.choice = choice;
  p.index = list_index(e.configs, config);
  p.workspace = cudnn::plan_workspace_bytes(*plan);
  p.plan = std::move(*plan);
  p.engine = info.str();
  p.rtc = info.has(CUDNN_BEHAVIOR_NOTE_RUNTIME_COMPILATION);
  return p;
}

std::optional<PlanCache::Pick> PlanCache::from_store(Entry& e, const std::string& key) {
  if (!store_) return std::nullopt;
  const PlanRecord* record = store_->find(key);
  // An untuned choice does not answer a tuning run; that run searches and replaces it.
  if (!record || (options_.autotune && !record->tuned)) return std::nullopt;
  const cudnn::Descriptor* config = config_for(e, record->choice);
  if (!config) return std::nullopt;
  const cudnn::EngineInfo info = cudnn::engine_info(*config);
  if (excluded(info, *e.graph, options_, /*strict_tf32=*/e.graph->has_fallback)) return std::nullopt;
  Pick p;
  const std::string build = serialising_build();
  std::optional<cudnn::Descriptor> restored;
  if (!build.empty() && record->plan_build == build) restored = cudnn::plan_from_json(handle_, record->plan);
  if (restored) {
    p.plan = std::move(*restored);
    p.serialised = true;
  } else if (auto plan = cudnn::make_plan(handle_, *config)) {
    p.plan = std::move(*plan);
  } else {
    return std::nullopt;
  }
  p.workspace = cudnn::plan_workspace_bytes(p.plan);
  if (static_cast<size_t>(p.workspace) > options_.max_workspace) return std::nullopt;
  p.choice = record->choice;
  p.index = list_index(e.configs, config);
  p.engine = info.str();
  p.rtc = info.has(CUDNN_BEHAVIOR_NOTE_RUNTIME_COMPILATION);
  p.ms = record->ms;
  p.cached = true;
  return p;
}

std::optional<PlanCache::Pick> PlanCache::search(Entry& e, const std::vector<int64_t>* uids,
                                                 const std::vector<void*>* pointers) {
  // A stored choice the heuristics no longer propose has already fetched their mode A list.
  if (e.configs.empty()) append_configs(e.configs, e.graph->graph, CUDNN_HEUR_MODE_A);
  std::vector<Candidate> candidates;
  const bool every = options_.autotune && e.graph->search_every_config;
  constexpr size_t kAll = std::numeric_limits<size_t>::max();
  const size_t wanted = !options_.autotune ? 1 : every ? kAll : static_cast<size_t>(std::max(1, options_.max_candidates));
  const CandidateBuild build{handle_, options_, e.configs, *e.graph};
  // Mode A first; if nothing of it builds, the fallback mode's list is appended (same order on every
  // rank); if still nothing, the TF32 rule is relaxed rather than failing the graph, unless the graph's
  // caller has separate passes to fall back on.
  const int passes = e.graph->has_fallback ? 2 : 3;
  for (int pass = 0; pass < passes && candidates.empty(); ++pass) {
    const size_t begin = pass == 1 ? e.configs.size() : 0;
    if (pass == 1) {
      append_configs(e.configs, e.graph->graph, CUDNN_HEUR_MODE_FALLBACK);
      e.fallback_listed = true;
    }
    if (pass == 2) e.report.why = "no engine without TF32 for fp32 data: TF32 allowed for this graph";
    build_candidates(build, begin, /*strict_tf32=*/pass < 2, wanted, candidates);
  }
  // Autotuning may also time the fallback list's configurations that mode A did not propose, as
  // PyTorch's cudnn.benchmark does: up to as many again, or all of them for a graph searched whole.
  if ((options_.search_fallback || every) && options_.autotune && !candidates.empty() && !e.fallback_listed) {
    e.fallback_listed = true;
    const size_t begin = e.configs.size();
    append_new_configs(e.configs, e.graph->graph, CUDNN_HEUR_MODE_FALLBACK);
    build_candidates(build, begin, /*strict_tf32=*/true, every ? kAll : candidates.size() + wanted, candidates);
  }
  e.report.heuristics = static_cast<int>(e.configs.size());
  e.report.built = static_cast<int>(candidates.size());
  if (candidates.empty()) return std::nullopt;

  // Autotune: the fastest candidate on the real data; a candidate that fails to execute is dropped.
  int best = 0;
  float best_ms = 0.0f;
  if (options_.autotune && uids && pointers && candidates.size() > 1) {
    const auto time = [&](const Candidate& c, float fastest) { return time_plan(c.plan, c.workspace, *uids, *pointers, fastest); };
    best = fastest_candidate(candidates, time, best_ms);
    if (best < 0) return std::nullopt;
  }
  Candidate& chosen = candidates[static_cast<size_t>(best)];
  Pick p;
  p.choice = choice_at(e.configs, static_cast<size_t>(chosen.index));
  p.plan = std::move(chosen.plan);
  p.workspace = chosen.workspace;
  p.engine = chosen.info.str();
  p.rtc = chosen.info.has(CUDNN_BEHAVIOR_NOTE_RUNTIME_COMPILATION);
  p.index = chosen.index;
  p.ms = best_ms;
  return p;
}

PlanChoice PlanCache::agree(const std::string& key, const PlanChoice& local) {
  if (!agreement_) return local;
  const std::vector<int32_t> mine = encode_choice(local);
  const int count = agreement_(key, mine[0]);
  // Rank 0's word count: 6 words of engine, occurrence and knob count, 4 per knob, within the store's knob
  // bound.
  if (count < 6 || count > 6 + 4 * 256)
    fatal("cuDNN plan for '" + key + "': the agreed choice has " + std::to_string(count) + " words");
  std::vector<int32_t> words{count};
  for (int i = 1; i <= count; ++i)
    words.push_back(agreement_(key, static_cast<size_t>(i) < mine.size() ? mine[static_cast<size_t>(i)] : 0));
  const std::optional<PlanChoice> agreed = decode_choice(words);
  if (!agreed) fatal("cuDNN plan for '" + key + "': the agreed engine choice is malformed");
  return *agreed;
}

PlanCache::Entry& PlanCache::find_or_build(const std::string& key, const BuildGraph& build,
                                           const std::vector<int64_t>* uids, const std::vector<void*>* pointers) {
  if (auto it = entries_.find(key); it != entries_.end()) return *it->second;

  cudaStreamCaptureStatus capturing = cudaStreamCaptureStatusNone;
  CHECK_CUDA(cudaStreamIsCapturing(lane_.stream, &capturing));
  if (capturing != cudaStreamCaptureStatusNone)
    fatal("cuDNN plan for '" + key + "' is first needed inside a CUDA graph capture; run one warm-up step first");

  const double start = now_s();
  auto entry = std::make_unique<Entry>();
  Entry& e = *entry;
  e.report.key = key;
  e.graph = build(&e.report.why);
  if (e.graph) {
    const std::string stored_as = store_key(key);
    std::optional<Pick> local = from_store(e, stored_as);
    if (!local) local = search(e, uids, pointers);
    const PlanChoice agreed = agree(key, local ? local->choice : PlanChoice{});

    if (agreed.engine >= 0) {
      if (!local || !(local->choice == agreed)) {  // rank 0 chose another engine: build that one here
        local = rebuild(e, agreed);
        if (!local)
          fatal("cuDNN plan for '" + key + "': the agreed engine configuration " + agreed.str() +
                " does not build on this rank");
      }
      Pick& p = *local;
      if (store_ && !p.cached) store_->put(stored_as, record_of(p.choice, options_.autotune, p.ms, p.rtc, p.plan));
      e.plan = std::move(p.plan);
      e.workspace = p.workspace;
      e.report.ok = true;
      e.report.choice = p.index;
      e.report.engine = p.engine;
      e.report.chosen = p.choice.str();
      e.report.cached = p.cached;
      e.report.serialised = p.serialised;
      e.report.ms = p.ms;
      e.report.workspace = p.workspace;
    } else {
      e.report.why = !local ? "no engine configuration builds a plan" : "rank 0 found no engine";
    }
  }
  if (!e.report.ok) e.graph.reset();  // nothing will run it
  e.report.build_s = now_s() - start;
  build_s_ += e.report.build_s;
  if (!e.report.ok) ++failed_;
  else if (e.report.cached) ++hits_;
  else ++misses_;
  if (store_ && store_->pending() > 0 && now_s() - last_save_s_ > kSaveEveryS) save();
  return *entries_.emplace(key, std::move(entry)).first->second;
}

bool PlanCache::run(const std::string& key, const BuildGraph& build, const std::vector<int64_t>& uids,
                    const std::vector<void*>& pointers, const PlanLane* lane) {
  // The lane holds for this run only, whatever way it leaves (a fault's exception included).
  struct LaneScope {
    PlanCache& cache;
    ~LaneScope() { cache.lane_ = cache.compute_; }
  } scope{*this};
  if (lane) lane_ = *lane;
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
