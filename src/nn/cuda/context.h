// The per-process CUDA context of the layers: one stream, the cuDNN and cuBLAS handles bound to it, the
// shared grow-only workspace, the cuDNN plan cache, and the numerical settings every layer follows
// (compute dtype, TF32, memory layout, determinism, fusion).
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
#include "nn/cuda/device_buffer.h"
#include "nn/cuda/layer_timer.h"
#include "nn/cuda/plan_cache.h"

namespace sb::cuda {

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
  bool fuse_conv_bias = false;   // conv + bias as one graph: runtime-compiled and slower than conv then a
                                 // bias kernel in docs/cudnn.md's measurements, so off unless asked for
  BatchNormPath batchnorm_path = BatchNormPath::Auto;  // BatchNorm2d's implementation; forced ones never fall back
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
  DeviceBuffer& workspace() { return workspace_; }

  // Waits for everything queued on the context's stream.
  void synchronize() const;

  // The training step in device memory (e.g. a field the trainer refreshes before each step). When set,
  // dropout reads its step from there instead of set_random_stream's, so that a captured CUDA graph draws
  // a new mask at each replay.
  void set_device_step(const uint64_t* step) { device_step_ = step; }
  const uint64_t* device_step() const { return device_step_; }

  // Gradient readiness, for overlapping the all-reduce with backward. Every layer with parameters calls
  // gradients_ready(its first gradient) once its backward has queued the writes of its gradients. Backward
  // visits the layers in the reverse of the flat buffer's order, so at that point every gradient from
  // that address to the end of the flat buffer is final (in stream order).
  using GradientReadyHook = std::function<void(const float* first_final)>;
  void set_gradient_ready_hook(GradientReadyHook hook) { gradient_ready_ = std::move(hook); }
  void gradients_ready(const float* first_final) const {
    if (gradient_ready_) gradient_ready_(first_final);
  }

  // Per-layer GPU timing (nn/cuda/layer_timer.h); null, the default, records nothing. Not while capturing.
  void set_layer_timer(LayerTimer* timer) { layer_timer_ = timer; }
  LayerTimer* layer_timer() const { return layer_timer_; }

 private:
  ContextOptions options_;
  cudaStream_t stream_ = nullptr;
  bool own_stream_ = false;
  cudnnHandle_t cudnn_ = nullptr;
  cublasHandle_t cublas_ = nullptr;
  DeviceBuffer workspace_;         // cuDNN plans' workspace, grow-only
  DeviceBuffer cublas_workspace_;  // fixed, so that cuBLAS never allocates inside a graph capture
  std::unique_ptr<PlanCache> plans_;
  const uint64_t* device_step_ = nullptr;
  GradientReadyHook gradient_ready_;
  LayerTimer* layer_timer_ = nullptr;
};

}  // namespace sb::cuda
