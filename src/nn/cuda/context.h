// The per-process CUDA context of the layers: the compute stream, the cuDNN and cuBLAS handles bound to it,
// the shared grow-only workspace, the cuDNN plan cache, the numerical settings every layer follows
// (compute dtype, TF32, memory layout, determinism, fusion), and the weight-gradient stream beside the
// compute stream with its own cuBLAS handle and workspaces (docs/architecture.md, "The streams of a step").
#pragma once
#include <cublas_v2.h>
#include <cuda_runtime_api.h>
#include <cudnn.h>

#include <cstdint>
#include <functional>
#include <memory>
#include <string>

#include "core/dtype.h"
#include "nn/batchnorm_path.h"
#include "nn/cuda/cuda_handles.h"
#include "nn/cuda/device_buffer.h"
#include "nn/cuda/gradient_pool.h"
#include "nn/cuda/layer_timer.h"
#include "nn/cuda/plan_cache.h"

namespace sb::cuda {

// The fewest input channels of a convolution that takes the next batch norm's sums under fold_bn_statistics
// alone: the stems, on 3 image channels, stay with the statistics pass.
constexpr int64_t kMinFoldedStatisticsChannels = 16;

struct ContextOptions {
  DType compute = DType::F32;    // activations and the weights' working copy; master weights stay fp32
  bool tf32 = true;              // fp32 convolutions and GEMMs may use TF32 tensor cores
  Layout layout = Layout::NCHW;  // of every 4-d activation
  bool deterministic = false;    // no non-deterministic cuDNN engines
  bool autotune = true;          // time the heuristics' engine configurations on first use
  int autotune_candidates = 8;   // at most this many configurations are built and timed per graph
  bool autotune_fallback = false;  // autotuning also times cuDNN's fallback list (PlanCacheOptions::search_fallback)
  std::string plan_cache_dir;    // the on-disk cuDNN plan cache (docs/cudnn.md); empty: none. The command
                                 // line's default is default_plan_cache_dir() (nn/plan_store.h)
  bool fuse_bn_relu = true;      // BatchNorm2d followed by ReLU as one cuDNN graph (nearly free, docs/cudnn.md)
  bool fused_bn_kernels = true;  // BatchNorm2d + ReLU (+ Dropout, + a Residual's add) as our fused passes
                                 // (kernels/bn_fused.h, planned by nn/fusion_plan.h); off: the layers above
  bool pool_in_bn_run = true;    // a fused [BatchNorm2d, ReLU] run takes the max pool after it (a ResNet's
                                 // stem; kernels::BnMaxPool); off: the pool is its own layer
  bool shortcut_bn_in_add = true;  // a projection shortcut's lone batch norm applied by the main branch's fused
                                   // run as it adds the shortcut (FusedBnRun::set_residual_run); off: it
                                   // writes its own output, which the add reads
  bool shortcut_bn_paired = true;  // and its backward passes computing the main branch's last batch norm's too
                                   // (FusedBnRun::paired_last_backward); off: each run its own passes
  bool fuse_residual_grad = true;  // a Residual's shortcut gradient added by its main branch's first dgrad
                                   // (cuDNN's beta 1) instead of a separate add pass (nn/cuda/containers.h)
  bool fuse_conv_bias = false;   // conv + bias as one graph: runtime-compiled and slower than conv then a
                                 // bias kernel in docs/cudnn.md's measurements, so off unless asked for
  bool fold_batch_norm = false;  // the fused batch-norm runs' reductions in the convolutions around them, where
                                 // an engine runs the graph (docs/cudnn.md, "Batch norm in the convolutions"):
                                 // a Conv2d before a run writes its sums in the epilogue, and a Conv2d after a
                                 // [BatchNorm2d, ReLU] run takes the run's backward reduction into its dgrad
  bool fold_bn_statistics = false;  // only the sums, and only where they pay: a Conv2d of at least
                                    // kMinFoldedStatisticsChannels input channels before a fused run writes the
                                    // run's sums in its epilogue where an engine runs the graph
  BatchNormPath batchnorm_path = BatchNormPath::Auto;  // BatchNorm2d's implementation; forced ones never fall back
  bool parallel_wgrad = true;    // weight gradients on a second stream, beside the input gradients' critical path
};

class Context {
 public:
  // Uses `stream` when given (not owned), otherwise creates a non-blocking stream of its own. The CUDA
  // device must already be selected.
  explicit Context(const ContextOptions& options, cudaStream_t stream = nullptr);
  ~Context();
  Context(const Context&) = delete;
  Context& operator=(const Context&) = delete;

  const ContextOptions& options() const { return options_; }
  DType compute_dtype() const { return options_.compute; }
  Layout layout() const { return options_.layout; }
  bool tf32() const { return options_.tf32; }
  bool deterministic() const { return options_.deterministic; }

  cudaStream_t stream() const { return stream_; }
  cudnnHandle_t cudnn() const { return cudnn_; }
  cublasHandle_t cublas() const { return cublas_; }
  PlanCache& plans() { return *plans_; }
  // The compute stream's scratch: the cuDNN plans' workspace there, which the fused batch-norm passes also
  // use (each run within one forward or one backward, nothing queued between its passes).
  DeviceBuffer& workspace() { return workspace_; }
  // A weight gradient in the compute dtype before it joins the fp32 gradient (Conv2d): one buffer for every
  // layer, since the weight gradients run one after another on one stream.
  DeviceBuffer& weight_gradient_scratch() { return wgrad_scratch_; }

  // Waits for everything queued on the context's streams.
  void synchronize() const;

  // Weight gradients beside the compute stream. A layer's backward calls begin_weight_gradient() before it
  // queues its input gradient, once everything its weight gradient reads is queued, and queues the weight
  // gradient's work on the stream returned: with parallel_wgrad the weight-gradient stream, forked from the
  // compute stream here; otherwise (or while a layer timer times the layers one by one) the compute stream.
  // join_weight_gradients() makes the compute stream wait for every weight gradient queued so far; the
  // network's backward ends with it, so nothing after backward (accumulation, all-reduce, optimizer, the end
  // of a graph capture) can see a gradient unwritten.
  cudaStream_t begin_weight_gradient();
  void join_weight_gradients();
  bool weight_gradient_forked() const { return wgrad_forked_; }
  // The cuBLAS handle and the cuDNN plans' lane (stream and workspace) for work on `stream`, which is the
  // compute stream or the one begin_weight_gradient() returned: two streams never share a workspace.
  cublasHandle_t cublas_for(cudaStream_t stream) const;
  PlanLane plan_lane_for(cudaStream_t stream);

  // The input gradients of backward, in buffers the layers share (nn/cuda/gradient_pool.h). The network's
  // backward begins with begin_backward(); a layer's backward takes its input gradient from
  // acquire_gradient(), and the container that handed it to the layer below gives it back with
  // release_gradient() once that layer's backward is queued (one that is not the pool's is ignored). In
  // forward, while no gradient lives, a fused run whose output only the next forward reads lends it from
  // the same buffers (FusedBnRun::lend_output).
  void begin_backward() { gradients_.begin_backward(); }
  void* acquire_gradient(size_t bytes) { return gradients_.acquire(bytes, stream_); }
  void release_gradient(const void* data) {
    gradients_.release(data, wgrad_forked_ ? wgrad_stream_.get() : nullptr);
  }
  const GradientPool& gradient_pool() const { return gradients_; }

  // The training step in device memory (e.g. a field the trainer refreshes before each step). When set,
  // dropout reads its step from there instead of set_random_stream's, so that a captured CUDA graph draws
  // a new mask at each replay.
  void set_device_step(const uint64_t* step) { device_step_ = step; }
  const uint64_t* device_step() const { return device_step_; }

  // Gradient readiness, for overlapping the all-reduce with backward. Every layer with parameters calls
  // gradients_ready(its first gradient) once its backward has queued the writes of its gradients. Backward
  // visits the layers in the reverse of the flat buffer's order, so at that point every gradient from
  // that address to the end of the flat buffer is final in the order of the stream the hook is given:
  // the compute stream, or, while weight gradients are forked, the weight-gradient stream made to wait
  // for the compute stream first (so that it is past the writes of both).
  using GradientReadyHook = std::function<void(const float* first_final, cudaStream_t final_on)>;
  void set_gradient_ready_hook(GradientReadyHook hook) { gradient_ready_ = std::move(hook); }
  void gradients_ready(const float* first_final);

  // Per-layer GPU timing (nn/cuda/layer_timer.h); null, the default, records nothing. Not while capturing.
  void set_layer_timer(LayerTimer* timer) { layer_timer_ = timer; }
  LayerTimer* layer_timer() const { return layer_timer_; }

 private:
  // The fork: the weight-gradient stream waits for the compute stream's work queued so far.
  void wait_for_compute_stream();

  ContextOptions options_;
  cudaStream_t stream_ = nullptr;
  bool own_stream_ = false;
  cudnnHandle_t cudnn_ = nullptr;
  cublasHandle_t cublas_ = nullptr;
  DeviceBuffer workspace_;         // cuDNN plans' workspace, grow-only
  DeviceBuffer cublas_workspace_;  // fixed, so that cuBLAS never allocates inside a graph capture
  std::unique_ptr<PlanCache> plans_;
  // The weight-gradient stream (empty with parallel_wgrad off), its handles and workspaces, and the events
  // that fork it from and join it to the compute stream (reused: a wait takes the latest record).
  CudaStream wgrad_stream_;
  cublasHandle_t wgrad_cublas_ = nullptr;
  DeviceBuffer wgrad_workspace_;         // cuDNN plans run on the weight-gradient stream, grow-only
  DeviceBuffer wgrad_cublas_workspace_;  // fixed, as cublas_workspace_
  DeviceBuffer wgrad_scratch_;           // see weight_gradient_scratch, grow-only
  CudaEvent fork_, join_;
  bool wgrad_forked_ = false;  // weight-gradient work queued since the last join
  const uint64_t* device_step_ = nullptr;
  GradientPool gradients_;
  GradientReadyHook gradient_ready_;
  LayerTimer* layer_timer_ = nullptr;
};

}  // namespace sb::cuda
