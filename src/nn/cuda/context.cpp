#include "nn/cuda/context.h"

#include "core/cuda_check.h"

namespace sb::cuda {

namespace {
constexpr size_t kCublasWorkspaceBytes = size_t{32} << 20;  // cuBLAS's recommendation for Hopper
}

Context::Context(const ContextOptions& options, cudaStream_t stream) : options_(options), stream_(stream) {
  if (!stream_) {
    CHECK_CUDA(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking));
    own_stream_ = true;
  }
  CHECK_CUDNN(cudnnCreate(&cudnn_));
  CHECK_CUDNN(cudnnSetStream(cudnn_, stream_));
  CHECK_CUBLAS(cublasCreate(&cublas_));
  CHECK_CUBLAS(cublasSetStream(cublas_, stream_));
  CHECK_CUBLAS(cublasSetWorkspace(cublas_, cublas_workspace_.ensure(kCublasWorkspaceBytes), kCublasWorkspaceBytes));
  // Plain fp32 GEMMs stay fp32 unless TF32 is allowed; each call also names its compute type.
  CHECK_CUBLAS(cublasSetMathMode(cublas_, options_.tf32 ? CUBLAS_TF32_TENSOR_OP_MATH : CUBLAS_DEFAULT_MATH));
  plans_ = std::make_unique<PlanCache>(cudnn_, stream_, workspace_);
  PlanCacheOptions plan_options;
  plan_options.autotune = options_.autotune;
  plan_options.max_candidates = options_.autotune_candidates;
  plan_options.search_fallback = options_.autotune_fallback;
  plan_options.deterministic = options_.deterministic;
  plan_options.allow_tf32 = options_.tf32;
  plan_options.store_folder = options_.plan_cache_dir;
  plans_->set_options(plan_options);
}

Context::~Context() {
  // Work still queued may use the handles; wait for it. Failures here cannot stop the job any more.
  if (stream_) cudaStreamSynchronize(stream_);
  plans_.reset();
  if (cublas_) cublasDestroy(cublas_);
  if (cudnn_) cudnnDestroy(cudnn_);
  if (own_stream_ && stream_) cudaStreamDestroy(stream_);
}

void Context::synchronize() const { CHECK_CUDA(cudaStreamSynchronize(stream_)); }

}  // namespace sb::cuda
