#include "nn/cuda/lt_matmul.h"

#include <algorithm>
#include <cstdio>
#include <mutex>
#include <optional>
#include <vector>

#include "core/cuda_check.h"
#include "core/error.h"
#include "core/log.h"
#include "kernels/k_slice_sum.h"
#include "nn/cuda/context.h"
#include "nn/cuda/cuda_handles.h"
#include "nn/cuda/fastest_round.h"

namespace sb::cuda {
namespace {

constexpr size_t kWorkspaceBytes = size_t{4} << 20;
constexpr int kMaxCandidates = 16;  // heuristic results asked for, at most (ContextOptions::autotune_candidates)
constexpr int kTimedRuns = 3;     // timed executions per round, after one warm-up
constexpr int64_t kMinSliceDepth = 256;  // the least of K a slice of a split product keeps
constexpr size_t kMaxPartialBytes = size_t{4} << 20;  // the most a split product's partial sums take

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

// A matmul's descriptor and operand layouts.
struct LtMatmul::Product {
  cublasLtMatmulDesc_t desc = nullptr;
  cublasLtMatrixLayout_t a = nullptr, b = nullptr, d = nullptr;

  Product() = default;
  Product(const Product&) = delete;
  Product& operator=(const Product&) = delete;
  ~Product() {
    if (d) destroy_logged(cublasLtMatrixLayoutDestroy(d), "cublasLtMatrixLayoutDestroy");
    if (b) destroy_logged(cublasLtMatrixLayoutDestroy(b), "cublasLtMatrixLayoutDestroy");
    if (a) destroy_logged(cublasLtMatrixLayoutDestroy(a), "cublasLtMatrixLayoutDestroy");
    if (desc) destroy_logged(cublasLtMatmulDescDestroy(desc), "cublasLtMatmulDescDestroy");
  }
};

// The product split into `slices` products over equal parts of K: one strided batch of cuBLASLt writing fp32
// partial sums, then kernels::sum_k_slices adding them with the epilogue.
struct LtMatmul::KSlices {
  int slices = 0;
  Product product;
  cublasLtMatmulAlgo_t algo{};
};

struct LtMatmul::Plan {
  LtMatmulShape shape;
  Product product;
  std::vector<cublasLtMatmulAlgo_t> candidates;  // the heuristic's usable results, best guess first
  std::vector<std::unique_ptr<KSlices>> k_slices;  // candidates after those: the product split over K
  std::string key;
  bool available = false;
  bool chosen = false;  // choice is final: the first candidate, or the fastest once timed
  size_t choice = 0;    // candidates[choice], else k_slices[choice - candidates.size()]

  size_t candidate_count() const { return candidates.size() + k_slices.size(); }
};

LtMatmul::LtMatmul() = default;
LtMatmul::~LtMatmul() {
  plans_.clear();
  if (handle_) destroy_logged(cublasLtDestroy(handle_), "cublasLtDestroy");
}

// Creates `product`'s descriptor (fp32 scale; compute in fp32, or TF32 where allowed) and its layouts: A, B
// and D as `s` gives them with K cut to `depth`, D in `d_type`; with batch > 1 each is a strided batch (the
// offsets in elements).
void LtMatmul::describe(Product& product, const LtMatmulShape& s, bool tf32, cublasLtEpilogue_t epilogue,
                        int64_t depth, DType d_type, int32_t batch, const int64_t (&strides)[3]) const {
  const cublasComputeType_t compute = tf32 ? CUBLAS_COMPUTE_32F_FAST_TF32 : CUBLAS_COMPUTE_32F;
  CHECK_CUBLAS(cublasLtMatmulDescCreate(&product.desc, compute, CUDA_R_32F));
  set_desc(product.desc, CUBLASLT_MATMUL_DESC_TRANSA, s.trans_a);
  set_desc(product.desc, CUBLASLT_MATMUL_DESC_TRANSB, s.trans_b);
  set_desc(product.desc, CUBLASLT_MATMUL_DESC_EPILOGUE, epilogue);
  const bool op_a_t = s.trans_a != CUBLAS_OP_N, op_b_t = s.trans_b != CUBLAS_OP_N;
  const int64_t ldd = batch > 1 ? s.m : s.ldd;
  CHECK_CUBLAS(cublasLtMatrixLayoutCreate(&product.a, lt_type(s.operands), static_cast<uint64_t>(op_a_t ? depth : s.m),
                                          static_cast<uint64_t>(op_a_t ? s.m : depth), s.lda));
  CHECK_CUBLAS(cublasLtMatrixLayoutCreate(&product.b, lt_type(s.operands), static_cast<uint64_t>(op_b_t ? s.n : depth),
                                          static_cast<uint64_t>(op_b_t ? depth : s.n), s.ldb));
  CHECK_CUBLAS(cublasLtMatrixLayoutCreate(&product.d, lt_type(d_type), static_cast<uint64_t>(s.m),
                                          static_cast<uint64_t>(s.n), ldd));
  if (batch <= 1) return;
  const cublasLtMatrixLayout_t layouts[3] = {product.a, product.b, product.d};
  for (int i = 0; i < 3; ++i) {
    CHECK_CUBLAS(cublasLtMatrixLayoutSetAttribute(layouts[i], CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT, &batch, sizeof(batch)));
    CHECK_CUBLAS(cublasLtMatrixLayoutSetAttribute(layouts[i], CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET, &strides[i],
                                                  sizeof(strides[i])));
  }
}

// The heuristic's usable results for `product` (at most `wanted`), or none where this cuBLASLt does not take
// the combination (an epilogue with these types or transposes): an answer, not an error.
std::vector<cublasLtMatmulAlgo_t> LtMatmul::proposals(const Product& product, int wanted,
                                                      const uint32_t (&aligns)[3]) const {
  cublasLtMatmulPreference_t pref = nullptr;
  CHECK_CUBLAS(cublasLtMatmulPreferenceCreate(&pref));
  const uint64_t ws = kWorkspaceBytes;
  cublasStatus_t status =
      cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &ws, sizeof(ws));
  const cublasLtMatmulPreferenceAttributes_t align_attrs[] = {
      CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES,
      CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_C_BYTES, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES};
  const uint32_t values[] = {aligns[0], aligns[1], aligns[2], aligns[2]};
  for (int i = 0; i < 4 && status == CUBLAS_STATUS_SUCCESS; ++i)
    status = cublasLtMatmulPreferenceSetAttribute(pref, align_attrs[i], &values[i], sizeof(values[i]));
  cublasLtMatmulHeuristicResult_t results[kMaxCandidates] = {};
  int found_count = 0;
  if (status == CUBLAS_STATUS_SUCCESS)
    status = cublasLtMatmulAlgoGetHeuristic(handle_, product.desc, product.a, product.b, product.d, product.d, pref,
                                            wanted, results, &found_count);
  destroy_logged(cublasLtMatmulPreferenceDestroy(pref), "cublasLtMatmulPreferenceDestroy");
  const bool refused = status == CUBLAS_STATUS_NOT_SUPPORTED || status == CUBLAS_STATUS_INVALID_VALUE;
  if (status != CUBLAS_STATUS_SUCCESS && !refused) CHECK_CUBLAS(status);
  std::vector<cublasLtMatmulAlgo_t> usable;
  if (status == CUBLAS_STATUS_SUCCESS)
    for (int i = 0; i < found_count && i < wanted; ++i)
      if (results[i].state == CUBLAS_STATUS_SUCCESS && results[i].workspaceSize <= kWorkspaceBytes)
        usable.push_back(results[i].algo);
  return usable;
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
  plan->shape = s;
  describe(plan->product, s, tf32, s.epilogue, s.k, s.output, 1, {0, 0, 0});
  // Without autotuning only the first result is ever run: ask for that one alone.
  const int wanted = ctx.options().autotune ? std::clamp(ctx.options().autotune_candidates, 1, kMaxCandidates) : 1;
  plan->candidates = proposals(plan->product, wanted, {align_a, align_b, align_d});
  plan->available = !plan->candidates.empty();
  if (plan->available && wanted > 1) add_k_slices(*plan, tf32, a, b);
  plan->key = key;
  Plan* p = plan.get();
  plans_.emplace(key, std::move(plan));
  return p;
}

// The heuristic proposes no split over K for some thin products (mnist-cnn's fc1 in fp32 without TF32: 64x128
// outputs over K = 9216, which its one proposal covers with 8 blocks of a 132-SM GPU, 52 us where the GPU
// could take a few), and cuBLASLt's own split-K takes no bias or ReLU epilogue. Autotuning then also times
// the product cut into 4 to 32 slices of K, as one strided batch writing fp32 partial sums that
// kernels::sum_k_slices adds in a fixed order with the epilogue: the same bits every run. Only the epilogues
// that kernel applies are split (none that writes a bias gradient).
void LtMatmul::add_k_slices(Plan& plan, bool tf32, const void* a, const void* b) {
  const LtMatmulShape& s = plan.shape;
  const bool epilogue_applied = s.epilogue == CUBLASLT_EPILOGUE_DEFAULT || s.epilogue == CUBLASLT_EPILOGUE_BIAS ||
                                s.epilogue == CUBLASLT_EPILOGUE_RELU_BIAS;
  if (!epilogue_applied) return;
  const bool op_a_t = s.trans_a != CUBLAS_OP_N, op_b_t = s.trans_b != CUBLAS_OP_N;
  const size_t element = dtype_size(s.operands);
  for (int slices : {4, 8, 16, 32}) {
    const int64_t depth = s.k / slices;
    const size_t partial_bytes = static_cast<size_t>(s.m * s.n) * slices * sizeof(float);
    if (depth < kMinSliceDepth || s.k % slices != 0 || partial_bytes > kMaxPartialBytes) continue;
    // Slice p of A and B starts `depth` rows (or columns) of K after slice p - 1.
    const int64_t stride_a = op_a_t ? depth : depth * s.lda, stride_b = op_b_t ? depth * s.ldb : depth;
    const uint32_t align_a = std::min(alignment_of(a), alignment_of(static_cast<const char*>(a) + stride_a * element));
    const uint32_t align_b = std::min(alignment_of(b), alignment_of(static_cast<const char*>(b) + stride_b * element));
    auto split = std::make_unique<KSlices>();
    split->slices = slices;
    describe(split->product, s, tf32, CUBLASLT_EPILOGUE_DEFAULT, depth, DType::F32, slices,
             {stride_a, stride_b, s.m * s.n});
    const std::vector<cublasLtMatmulAlgo_t> found = proposals(split->product, 1, {align_a, align_b, 256});
    if (found.empty()) continue;
    split->algo = found.front();
    partials_.ensure(partial_bytes);
    plan.k_slices.push_back(std::move(split));
  }
}

void LtMatmul::launch(const Plan& plan, size_t candidate, const void* a, const void* b, void* d, const void* bias,
                      cudaStream_t stream) {
  void* ws = workspace_.ensure(kWorkspaceBytes);
  const float alpha = 1.0f, beta = 0.0f;
  if (candidate < plan.candidates.size()) {
    const Product& p = plan.product;
    CHECK_CUBLAS(cublasLtMatmul(handle_, p.desc, &alpha, a, p.a, b, p.b, &beta, d, p.d, d, p.d,
                                &plan.candidates[candidate], ws, kWorkspaceBytes, stream));
    return;
  }
  const KSlices& split = *plan.k_slices.at(candidate - plan.candidates.size());
  const Product& p = split.product;
  auto* partials = static_cast<float*>(partials_.data());
  CHECK_CUBLAS(cublasLtMatmul(handle_, p.desc, &alpha, a, p.a, b, p.b, &beta, partials, p.d, partials, p.d,
                              &split.algo, ws, kWorkspaceBytes, stream));
  const LtMatmulShape& s = plan.shape;
  kernels::sum_k_slices(partials, split.slices, s.m, s.n, d, s.ldd, s.output,
                        s.epilogue == CUBLASLT_EPILOGUE_DEFAULT ? nullptr : bias,
                        s.epilogue == CUBLASLT_EPILOGUE_RELU_BIAS, stream);
}

size_t LtMatmul::fastest_candidate(const Plan& plan, const void* a, const void* b, void* d, const void* bias,
                                   cudaStream_t stream) {
  size_t best = 0;
  float best_ms = 0.0f;
  for (size_t c = 0; c < plan.candidate_count(); ++c) {
    launch(plan, c, a, b, d, bias, stream);  // warm-up
    const float ms = *fastest_round_ms(stream, kTimedRuns, [&] {
      launch(plan, c, a, b, d, bias, stream);
      return true;
    });
    if (c == 0 || ms < best_ms) {
      best = c;
      best_ms = ms;
    }
  }
  return best;
}

namespace {

// The choices made in this process, by device and plan key, so that every LtMatmul of a process (each layer
// and each rebuilt network) runs the same algorithm for the same matmul: the same bits every run.
std::mutex choices_mutex;
std::map<std::string, size_t>& process_choices() {
  static std::map<std::string, size_t> choices;
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

void LtMatmul::choose(Context& ctx, Plan& plan, const void* a, const void* b, void* d, const void* bias,
                      cudaStream_t stream) {
  plan.chosen = true;
  if (!ctx.options().autotune) return;  // the heuristic's first result, as without autotuning
  // No agreement between the ranks, unlike the cuDNN plans: a collective here would have to be reached by
  // every rank for every plan, and the ranks' sets of plans differ (a `scale` study runs its 1-GPU
  // configuration on rank 0 alone; a rank's last batch may be shorter). Each rank keeps its own fastest: the
  // averaged gradients keep the replicas' parameters identical whichever kernels computed them.
  const std::string process_key = device_key(plan.key);
  std::optional<size_t> earlier;
  {
    std::lock_guard<std::mutex> lock(choices_mutex);
    auto found = process_choices().find(process_key);
    if (found != process_choices().end()) earlier = found->second;
  }
  size_t choice = 0;
  if (earlier) {
    choice = *earlier;
  } else {
    // Timing needs the stream outside a capture; a capture takes the first result.
    if (plan.candidate_count() > 1 && !capturing(stream)) choice = fastest_candidate(plan, a, b, d, bias, stream);
    std::lock_guard<std::mutex> lock(choices_mutex);
    choice = process_choices().emplace(process_key, choice).first->second;
  }
  plan.choice = choice < plan.candidate_count() ? choice : 0;
}

bool LtMatmul::run(Context& ctx, const LtMatmulShape& s, const void* a, const void* b, void* d, const void* bias,
                   cudaStream_t stream) {
  Plan* plan = plan_for(ctx, s, a, b, d, bias);
  if (!plan->available) return false;
  if (bias) set_desc(plan->product.desc, CUBLASLT_MATMUL_DESC_BIAS_POINTER, bias);
  if (!plan->chosen) choose(ctx, *plan, a, b, d, bias, stream);
  launch(*plan, plan->choice, a, b, d, bias, stream);
  return true;
}

size_t LtMatmul::candidate_count(Context& ctx, const LtMatmulShape& s, const void* a, const void* b, void* d,
                                 const void* bias) {
  const Plan* plan = plan_for(ctx, s, a, b, d, bias);
  return plan->available ? plan->candidate_count() : 0;
}

int LtMatmul::split_slices(Context& ctx, const LtMatmulShape& s, const void* a, const void* b, void* d,
                           const void* bias, size_t candidate) {
  const Plan* plan = plan_for(ctx, s, a, b, d, bias);
  if (candidate < plan->candidates.size()) return 1;
  return plan->k_slices.at(candidate - plan->candidates.size())->slices;
}

void LtMatmul::run_candidate(Context& ctx, const LtMatmulShape& s, const void* a, const void* b, void* d,
                             const void* bias, size_t candidate, cudaStream_t stream) {
  Plan* plan = plan_for(ctx, s, a, b, d, bias);
  if (candidate >= plan->candidate_count())
    fatal("LtMatmul::run_candidate: candidate " + std::to_string(candidate) + " of " +
          std::to_string(plan->candidate_count()));
  if (bias) set_desc(plan->product.desc, CUBLASLT_MATMUL_DESC_BIAS_POINTER, bias);
  launch(*plan, candidate, a, b, d, bias, stream);
}

}  // namespace sb::cuda
