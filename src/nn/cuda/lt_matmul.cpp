#include "nn/cuda/lt_matmul.h"

#include <cstdio>

#include "core/cuda_check.h"
#include "core/error.h"
#include "core/log.h"
#include "nn/cuda/context.h"

namespace sb::cuda {
namespace {

constexpr size_t kWorkspaceBytes = size_t{4} << 20;

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
  bool available = false;

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
  cublasLtMatmulHeuristicResult_t result{};
  int found_count = 0;
  if (status == CUBLAS_STATUS_SUCCESS)
    status = cublasLtMatmulAlgoGetHeuristic(handle_, plan->desc, plan->a,
                                            plan->b, plan->d, plan->d, pref, 1, &result, &found_count);
  destroy_logged(cublasLtMatmulPreferenceDestroy(pref), "cublasLtMatmulPreferenceDestroy");
  // A combination this cuBLASLt does not take (an epilogue with these types or transposes) is an answer,
  // "none", not an error: the caller falls back to cublasGemmEx.
  const bool refused = status == CUBLAS_STATUS_NOT_SUPPORTED || status == CUBLAS_STATUS_INVALID_VALUE;
  if (status != CUBLAS_STATUS_SUCCESS && !refused) CHECK_CUBLAS(status);
  plan->available = status == CUBLAS_STATUS_SUCCESS && found_count > 0 && result.state == CUBLAS_STATUS_SUCCESS;
  plan->algo = result.algo;
  Plan* p = plan.get();
  plans_.emplace(key, std::move(plan));
  return p;
}

bool LtMatmul::run(Context& ctx, const LtMatmulShape& s, const void* a, const void* b, void* d, const void* bias,
                   cudaStream_t stream) {
  Plan* plan = plan_for(ctx, s, a, b, d, bias);
  if (!plan->available) return false;
  if (bias) set_desc(plan->desc, CUBLASLT_MATMUL_DESC_BIAS_POINTER, bias);
  void* ws = workspace_.ensure(kWorkspaceBytes);
  const float alpha = 1.0f, beta = 0.0f;
  CHECK_CUBLAS(cublasLtMatmul(handle_, plan->desc, &alpha, a, plan->a, b,
                              plan->b, &beta, d, plan->d, d, plan->d, &plan->algo, ws, kWorkspaceBytes, stream));
  return true;
}

}  // namespace sb::cuda
