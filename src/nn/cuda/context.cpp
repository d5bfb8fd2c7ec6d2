#include "nn/cuda/context.h"

#include "core/cuda_check.h"

namespace sb::cuda {

namespace {
constexpr size_t kCublasWorkspaceBytes = size_t{32} << 20;  // cuBLAS's recommendation for Hopper

// A cuBLAS handle bound to `stream`, with a fixed workspace (so that cuBLAS never allocates inside a graph
// capture) and TF32 only where allowed (plain fp32 GEMMs stay fp32; each call also names its compute type).
cublasHandle_t make_cublas(cudaStream_t stream, DeviceBuffer& workspace, bool tf32) {
  cublasHandle_t handle = nullptr;
  CHECK_CUBLAS(cublasCreate(&handle));
  CHECK_CUBLAS(cublasSetStream(handle, stream));
  CHECK_CUBLAS(cublasSetWorkspace(handle, workspace.ensure(kCublasWorkspaceBytes), kCublasWorkspaceBytes));
  CHECK_CUBLAS(cublasSetMathMode(handle, tf32 ? CUBLAS_TF32_TENSOR_OP_MATH : CUBLAS_DEFAULT_MATH));
  return handle;
}
}  // namespace

Context::Context(const ContextOptions& options, cudaStream_t stream) : options_(options), stream_(stream) {
  if (!stream_) {
    CHECK_CUDA(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking));
    own_stream_ = true;
  }
  CHECK_CUDNN(cudnnCreate(&cudnn_));
  CHECK_CUDNN(cudnnSetStream(cudnn_, stream_));
  cublas_ = make_cublas(stream_, cublas_workspace_, options_.tf32);
  if (options_.parallel_wgrad) {
    // The compute stream's priority, so that neither stream's work queues behind the other's.
    int priority = 0;
    CHECK_CUDA(cudaStreamGetPriority(stream_, &priority));
    wgrad_stream_ = CudaStream::create_non_blocking(priority);
    wgrad_cublas_ = make_cublas(wgrad_stream_.get(), wgrad_cublas_workspace_, options_.tf32);
    fork_ = CudaEvent::create(cudaEventDisableTiming);
    join_ = CudaEvent::create(cudaEventDisableTiming);
  }
  plans_ = std::make_unique<PlanCache>(cudnn_, PlanLane{stream_, &workspace_});
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
  wgrad_stream_.synchronize_noexcept();
  plans_.reset();
  if (wgrad_cublas_) cublasDestroy(wgrad_cublas_);
  if (cublas_) cublasDestroy(cublas_);
  if (cudnn_) cudnnDestroy(cudnn_);
  if (own_stream_ && stream_) cudaStreamDestroy(stream_);
}

void Context::synchronize() const {
  if (wgrad_stream_) wgrad_stream_.synchronize();
  CHECK_CUDA(cudaStreamSynchronize(stream_));
}

void Context::wait_for_compute_stream() {
  fork_.record(stream_);
  wgrad_stream_.wait(fork_.get());
}

cudaStream_t Context::begin_weight_gradient() {
  // Per-layer timing brackets each layer with events on the compute stream: its layers run on that alone.
  if (!wgrad_stream_ || layer_timer_) return stream_;
  wait_for_compute_stream();
  wgrad_forked_ = true;
  return wgrad_stream_.get();
}

void Context::join_weight_gradients() {
  if (!wgrad_forked_) return;  // a capture must not wait on an event recorded outside it
  join_.record(wgrad_stream_.get());
  CHECK_CUDA(cudaStreamWaitEvent(stream_, join_.get(), 0));
  wgrad_forked_ = false;
  gradients_.joined();
}

cublasHandle_t Context::cublas_for(cudaStream_t stream) const {
  return wgrad_stream_ && stream == wgrad_stream_.get() ? wgrad_cublas_ : cublas_;
}

PlanLane Context::plan_lane_for(cudaStream_t stream) {
  if (wgrad_stream_ && stream == wgrad_stream_.get()) return PlanLane{stream, &wgrad_workspace_};
  return PlanLane{stream_, &workspace_};
}

void Context::gradients_ready(const float* first_final) {
  if (!gradient_ready_) return;
  if (!wgrad_forked_) {
    gradient_ready_(first_final, stream_);
    return;
  }
  // The weight-gradient stream, once past the compute stream's work queued so far, is past both streams'
  // writes of these gradients. Its next work is a fork, which waits for at least as much: nothing is delayed.
  wait_for_compute_stream();
  gradient_ready_(first_final, wgrad_stream_.get());
}

}  // namespace sb::cuda
