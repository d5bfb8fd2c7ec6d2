#include "nn/cuda/lt_matmul.h"

#include <algorithm>
#include <cstdio>
#include <mutex>
#include <optional>
#include <vector>

#include "core/cuda_check.h"
#include "core/error.h"
#include "core/log.h"
#include "nn/cuda/context.h"
#include "nn/cuda/cuda_handles.h"

namespace sb::cuda {
namespace {

constexpr size_t kWorkspaceBytes = size_t{4} << 20;
constexpr int kMaxCandidates = 16;  // heuristic results asked for, at most (ContextOptions::autotune_candidates)
constexpr int kTimedRuns = 3;   // timed executions per candidate, after one warm-up
constexpr size_t kSplitKBases = 2;        // heuristic results whose split-K variants autotuning also times
constexpr int64_t kMinSplitDepth = 256;  // the least of K each split keeps

cudaDataType_t lt_type(DType t) {
  switch (t) {
    case DType::F32: return CUDA_R_32F;
    case DType::F16: return CUDA_R_16F;
    case DType::BF16: return CUDA_R_16BF;
  }
  fatal("lt_matmul: unknown dtype");
}

// The largest power of two up to 256 that divides the address (the heuristic's alignment preference).
uint32_t alignment_of(const void* p) {
  const auto v = reinterpret_cast<uintptr_t>(p);
  uint32_t a = 256;
  while (a > 1 && (v & (a - 1)) != 0) a >>= 1;
  return a;
}

void destroy_logged(cublasStatus_t status, const char* call) noexcept {
  if (status != CUBLAS_STATUS_SUCCESS)
    log_all("warning: %s failed while releasing a cuBLASLt object (%s)\n", call, cublasGetStatusString(status));
}

template <typename T>
void set_desc(cublasLtMatmulDesc_t desc, cublasLtMatmulDescAttributes_t attr, const T& value) {
  CHECK_CUBLAS(cublasLtMatmulDescSetAttribute(desc, attr, &value, sizeof(value)));
}

}  // namespace

struct LtMatmul::Plan {
  cublasLtMatmulDesc_t desc = nullptr;
  cublasLtMatrixLayout_t a = nullptr, b = nullptr, d = nullptr;
  cublasLtMatmulAlgo_t algo{};
  std::vector<cublasLtMatmulAlgo_t> candidates;  // the heuristic's usable results, best guess first
  std::string key;
  bool available = false;
  bool chosen = false;  // algo is final: the first candidate, or the fastest once timed

  ~Plan() {
    if (d) destroy_logged(cublasLtMatrixLayoutDestroy(d), "cublasLtMatrixLayoutDestroy");
    if (b) destroy_logged(cublasLtMatrixLayoutDestroy(b), "cublasLtMatrixLayoutDestroy");
    if (a) destroy_logged(cublasLtMatrixLayoutDestroy(a), "cublasLtMatrixLayoutDestroy");
    if (desc) destroy_logged(cublasLtMatmulDescDestroy(desc), "cublasLtMatmulDescDestroy");
  }
};

LtMatmul::LtMatmul() = default;
LtMatmul::~LtMatmul() {
  plans_.clear();
  if (handle_) destroy_logged(cublasLtDestroy(handle_), "cublasLtDestroy");
}

LtMatmul::Plan* LtMatmul::plan_for(Context& ctx, const LtMatmulShape& s, const void* a, const void* b, void* d,
                                   const void* bias) {
  const bool tf32 = s.operands == DType::F32 && ctx.tf32();
  const uint32_t align_a = alignment_of(a), align_b = alignment_of(b), align_d = alignment_of(d);
  char key[256];
  std::snprintf(key, sizeof(key), "%d %d %lld %lld %lld %lld %lld %lld %d %d %d %d %u %u %u %d",
                static_cast<int>(s.trans_a), static_cast<int>(s.trans_b), static_cast<long long>(s.m),
                static_cast<long long>(s.n), static_cast<long long>(s.k), static_cast<long long>(s.lda),
                static_cast<long long>(s.ldb), static_cast<long long>(s.ldd), static_cast<int>(s.operands),
                static_cast<int>(s.output), static_cast<int>(s.epilogue), tf32 ? 1 : 0, align_a, align_b, align_d,
                bias ? 1 : 0);
  auto found = plans_.find(key);
  if (found != plans_.end()) return found->second.get();

  if (!handle_) CHECK_CUBLAS(cublasLtCreate(&handle_));
  auto plan = std::make_unique<Plan>();
  const cublasComputeType_t compute = tf32 ? CUBLAS_COMPUTE_32F_FAST_TF32 : CUBLAS_COMPUTE_32F;
  CHECK_CUBLAS(cublasLtMatmulDescCreate(&plan->desc, compute, CUDA_R_32F));
  set_desc(plan->desc, CUBLASLT_MATMUL_DESC_TRANSA, s.trans_a);
  set_desc(plan->desc, CUBLASLT_MATMUL_DESC_TRANSB, s.trans_b);
  set_desc(plan->desc, CUBLASLT_MATMUL_DESC_EPILOGUE, s.epilogue);
  const bool op_a_t = s.trans_a != CUBLAS_OP_N, op_b_t = s.trans_b != CUBLAS_OP_N;
  CHECK_CUBLAS(cublasLtMatrixLayoutCreate(&plan->a, lt_type(s.operands), static_cast<uint64_t>(op_a_t ? s.k : s.m),
                                          static_cast<uint64_t>(op_a_t ? s.m : s.k), s.lda));
  CHECK_CUBLAS(cublasLtMatrixLayoutCreate(&plan->b, lt_type(s.operands), static_cast<uint64_t>(op_b_t ? s.n : s.k),
                                          static_cast<uint64_t>(op_b_t ? s.k : s.n), s.ldb));
  CHECK_CUBLAS(cublasLtMatrixLayoutCreate(&plan->d, lt_type(s.output), static_cast<uint64_t>(s.m),
                                          static_cast<uint64_t>(s.n), s.ldd));

  cublasLtMatmulPreference_t pref = nullptr;
  CHECK_CUBLAS(cublasLtMatmulPreferenceCreate(&pref));
  const uint64_t ws = kWorkspaceBytes;
  cublasStatus_t status =
      cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &ws, sizeof(ws));
  const cublasLtMatmulPreferenceAttributes_t align_attrs[] = {
      CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES,
      CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_C_BYTES, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES};
  const uint32_t aligns[] = {align_a, align_b, align_d, align_d};
  for (int i = 0; i < 4 && status == CUBLAS_STATUS_SUCCESS; ++i)
    status = cublasLtMatmulPreferenceSetAttribute(pref, align_attrs[i], &aligns[i], sizeof(aligns[i]));
  // Without autotuning only the first result is ever run: ask for that one alone.
  const int wanted = ctx.options().autotune ? std::clamp(ctx.options().autotune_candidates, 1, kMaxCandidates) : 1;
  cublasLtMatmulHeuristicResult_t results[kMaxCandidates] = {};
  int found_count = 0;
  if (status == CUBLAS_STATUS_SUCCESS)
    status = cublasLtMatmulAlgoGetHeuristic(handle_, plan->desc, plan->a, plan->b, plan->d, plan->d, pref, wanted,
                                            results, &found_count);
  destroy_logged(cublasLtMatmulPreferenceDestroy(pref), "cublasLtMatmulPreferenceDestroy");
  // A combination this cuBLASLt does not take (an epilogue with these types or transposes) is an answer,
  // "none", not an error: the caller falls back to cublasGemmEx.
  const bool refused = status == CUBLAS_STATUS_NOT_SUPPORTED || status == CUBLAS_STATUS_INVALID_VALUE;
  if (status != CUBLAS_STATUS_SUCCESS && !refused) CHECK_CUBLAS(status);
  if (status == CUBLAS_STATUS_SUCCESS)
    for (int i = 0; i < found_count && i < wanted; ++i)
      if (results[i].state == CUBLAS_STATUS_SUCCESS && results[i].workspaceSize <= kWorkspaceBytes)
        plan->candidates.push_back(results[i].algo);
  plan->available = !plan->candidates.empty();
  if (plan->available && wanted > 1) add_split_k_variants(*plan, s);
  if (plan->available) plan->algo = plan->candidates.front();
  plan->key = key;
  Plan* p = plan.get();
  plans_.emplace(key, std::move(plan));
  return p;
}

// The heuristic proposes no split over K for some thin products in fp32 without TF32 (mnist-cnn's fc1: 64x128
// outputs over K = 9216, which one proposal covers with 8 blocks of a 132-SM GPU). Autotuning then also times
// the first proposals split 4 to 32 ways over K, each part summed in fp32 in the workspace and the parts added
// in a separate pass (CUBLASLT_REDUCTION_SCHEME_COMPUTE_TYPE: the same order every run, no atomics). They go
// after the heuristic's own results, so the same key numbers its candidates alike in every layer.
void LtMatmul::add_split_k_variants(Plan& plan, const LtMatmulShape& s) const {
  const size_t proposals = std::min(plan.candidates.size(), kSplitKBases);
  for (size_t i = 0; i < proposals; ++i) {
    int32_t splits = 0;
    size_t written = 0;
    if (cublasLtMatmulAlgoConfigGetAttribute(&plan.candidates[i], CUBLASLT_ALGO_CONFIG_SPLITK_NUM, &splits,
                                             sizeof(splits), &written) != CUBLAS_STATUS_SUCCESS ||
        splits > 1)
      continue;
    for (int32_t parts : {4, 8, 16, 32}) {
      if (s.k / parts < kMinSplitDepth) break;
      cublasLtMatmulAlgo_t algo = plan.candidates[i];
      const uint32_t scheme = CUBLASLT_REDUCTION_SCHEME_COMPUTE_TYPE;
      if (cublasLtMatmulAlgoConfigSetAttribute(&algo, CUBLASLT_ALGO_CONFIG_SPLITK_NUM, &parts, sizeof(parts)) !=
              CUBLAS_STATUS_SUCCESS ||
          cublasLtMatmulAlgoConfigSetAttribute(&algo, CUBLASLT_ALGO_CONFIG_REDUCTION_SCHEME, &scheme, sizeof(scheme)) !=
              CUBLAS_STATUS_SUCCESS)
        continue;
      // A configuration this algorithm, epilogue or workspace cannot run is left out, not an error.
      cublasLtMatmulHeuristicResult_t checked{};
      if (cublasLtMatmulAlgoCheck(handle_, plan.desc, plan.a, plan.b, plan.d, plan.d, &algo, &checked) ==
              CUBLAS_STATUS_SUCCESS &&
          checked.state == CUBLAS_STATUS_SUCCESS && checked.workspaceSize <= kWorkspaceBytes)
        plan.candidates.push_back(algo);
    }
  }
}

void LtMatmul::launch(const Plan& plan, const cublasLtMatmulAlgo_t& algo, const void* a, const void* b, void* d,
                      cudaStream_t stream) {
  void* ws = workspace_.ensure(kWorkspaceBytes);
  const float alpha = 1.0f, beta = 0.0f;
  CHECK_CUBLAS(cublasLtMatmul(handle_, plan.desc, &alpha, a, plan.a, b, plan.b, &beta, d, plan.d, d, plan.d, &algo, ws,
                              kWorkspaceBytes, stream));
}

int LtMatmul::fastest_candidate(const Plan& plan, const void* a, const void* b, void* d, cudaStream_t stream) {
  const CudaEvent start = CudaEvent::create(), stop = CudaEvent::create();
  int best = 0;
  float best_ms = 0.0f;
  for (size_t c = 0; c < plan.candidates.size(); ++c) {
    launch(plan, plan.candidates[c], a, b, d, stream);  // warm-up
    start.record(stream);
    for (int r = 0; r < kTimedRuns; ++r) launch(plan, plan.candidates[c], a, b, d, stream);
    stop.record(stream);
    stop.synchronize();
    const float ms = CudaEvent::elapsed_ms(start, stop);
    if (c == 0 || ms < best_ms) {
      best = static_cast<int>(c);
      best_ms = ms;
    }
  }
  return best;
}

namespace {

// The choices made in this process, by device and plan key, so that every LtMatmul of a process (each layer
// and each rebuilt network) runs the same algorithm for the same matmul: the same bits every run.
std::mutex choices_mutex;
std::map<std::string, int>& process_choices() {
  static std::map<std::string, int> choices;
  return choices;
}

std::string device_key(const std::string& key) {
  int device = 0;
  CHECK_CUDA(cudaGetDevice(&device));
  return std::to_string(device) + ":" + key;
}

bool capturing(cudaStream_t stream) {
  cudaStreamCaptureStatus status = cudaStreamCaptureStatusNone;
  CHECK_CUDA(cudaStreamIsCapturing(stream, &status));
  return status != cudaStreamCaptureStatusNone;
}

}  // namespace

void LtMatmul::choose(Context& ctx, Plan& plan, const void* a, const void* b, void* d, cudaStream_t stream) {
  plan.chosen = true;
  if (!ctx.options().autotune) return;  // the heuristic's first result, as without autotuning
  // No agreement between the ranks, unlike the cuDNN plans: a collective here would have to be reached by
  // every rank for every plan, and the ranks' sets of plans differ (a `scale` study runs its 1-GPU
  // configuration on rank 0 alone; a rank's last batch may be shorter). Each rank keeps its own fastest: the
  // averaged gradients keep the replicas' parameters identical whichever kernels computed them.
  const std::string process_key = device_key(plan.key);
  std::optional<int> earlier;
  {
    std::lock_guard<std::mutex> lock(choices_mutex);
    auto found = process_choices().find(process_key);
    if (found != process_choices().end()) earlier = found->second;
  }
  int choice = 0;
  if (earlier) {
    choice = *earlier;
  } else {
    // Timing needs the stream outside a capture; a capture takes the first result.
    if (plan.candidates.size() > 1 && !capturing(stream)) choice = fastest_candidate(plan, a, b, d, stream);
    std::lock_guard<std::mutex> lock(choices_mutex);
    choice = process_choices().emplace(process_key, choice).first->second;
  }
  if (static_cast<size_t>(choice) >= plan.candidates.size()) choice = 0;
  plan.algo = plan.candidates[static_cast<size_t>(choice)];
}

bool LtMatmul::run(Context& ctx, const LtMatmulShape& s, const void* a, const void* b, void* d, const void* bias,
                   cudaStream_t stream) {
  Plan* plan = plan_for(ctx, s, a, b, d, bias);
  if (!plan->available) return false;
  if (bias) set_desc(plan->desc, CUBLASLT_MATMUL_DESC_BIAS_POINTER, bias);
  if (!plan->chosen) choose(ctx, *plan, a, b, d, stream);
  launch(*plan, plan->algo, a, b, d, stream);
  return true;
}

}  // namespace sb::cuda
