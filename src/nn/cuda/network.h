// A CUDA network instantiated from a spec over flat device buffers: fp32 master parameters, fp32
// gradients, fp32 buffers (BN running statistics) and, for fp16/bf16 compute, a compute-dtype copy of the
// parameters. The master parameters start as a copy of the host buffer that sb::initialize_flat fills from
// the seed, so the CPU and CUDA networks of one spec and seed start from identical weights.
#pragma once
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "nn/filter_order.h"
#include "nn/cuda/context.h"
#include "nn/cuda/device_buffer.h"
#include "nn/cuda/layer.h"
#include "nn/spec.h"

namespace sb::cuda {

// What forward returns: the spec's own output, or, for a spec ending in LogSoftmax (ends_in_log_softmax,
// nn/fusion_plan.h), the logits before it, for a loss that computes softmax cross-entropy itself.
enum class NetworkOutput { AsSpecified, LogitsForLoss };

// Whether backward computes the network's input gradient: training never reads it, so by default the first
// layer skips that work (a convolution's dgrad); tests that compare it ask for it.
enum class InputGradient { Skip, Compute };

class Network {
 public:
  Network(LayerSpec spec, uint64_t seed, Context& ctx, NetworkOutput output = NetworkOutput::AsSpecified,
          InputGradient input_gradient = InputGradient::Skip);

  const LayerSpec& spec() const { return spec_; }
  const std::vector<ParamSpec>& param_specs() const { return param_specs_; }
  const std::vector<ParamSpec>& buffer_specs() const { return buffer_specs_; }
  int64_t param_count() const { return param_count_; }
  int64_t buffer_count() const { return buffer_count_; }
  Context& context() { return ctx_; }
  // True when the spec's trailing LogSoftmax is left to the loss: forward returns logits and backward
  // takes their gradient.
  bool log_softmax_in_loss() const { return log_softmax_in_loss_; }

  // Device pointers to the flat buffers (stable for the network's life). Under NHWC the convolution
  // filters in them (and in the compute copy) are stored K, R, S, C (stored_filters(); nn/filter_order.h):
  // anything that copies a whole parameter-shaped buffer to or from the host reorders it.
  float* params() { return static_cast<float*>(params_.data()); }
  float* grads() { return static_cast<float*>(grads_.data()); }
  float* buffers() { return static_cast<float*>(buffers_.data()); }
  // The compute-dtype copy (== params() in fp32).
  void* compute_params() { return compute_copy_ ? compute_params_.data() : params_.data(); }

  // Writes the compute-dtype copy from the master weights (nothing to do in fp32). Call after changing
  // the master weights, unless the optimizer wrote the copy itself (FusedOptimizerArgs::params_copy).
  void refresh_compute_params();

  // The filters stored K, R, S, C in the device buffers (empty under NCHW).
  const std::vector<FilterSegment>& stored_filters() const { return stored_filters_; }

  // Host <-> device copies of the flat buffers in the spec's order (synchronous); set_* refresh the compute copy.
  void set_params(const std::vector<float>& host);
  void set_buffers(const std::vector<float>& host);
  std::vector<float> get_params() const;
  std::vector<float> get_grads() const;
  std::vector<float> get_buffers() const;

  void set_random_stream(uint64_t key, uint64_t step) { root_->set_random_stream(key, step); }
  void set_first_sample(int64_t first) { root_->set_first_sample(first); }
  const DeviceTensor& forward(const DeviceTensor& x, Mode mode) { return root_->forward(x, mode); }
  // Writes every parameter gradient for the last forward; returns the input gradient (a tensor without
  // data under InputGradient::Skip). Ends with the weight-gradient stream joined into the compute stream:
  // whatever is queued on the compute stream afterwards sees every gradient written.
  const DeviceTensor& backward(const DeviceTensor& dy);
  // The fusion planner's choice for every batch-norm run, one line each (nn/fusion_plan.h); after a first
  // forward it includes the runs the fused kernels refused at their shape.
  std::string fusion_report() const;

 private:
  std::vector<float> download(const DeviceBuffer& buffer, int64_t count) const;
  // A buffer of param_count() floats in the host's filter order (parameters, gradients).
  std::vector<float> download_parameter_shaped(const DeviceBuffer& buffer) const;

  LayerSpec spec_;
  Context& ctx_;
  std::vector<ParamSpec> param_specs_, buffer_specs_;
  std::vector<FilterSegment> stored_filters_;
  int64_t param_count_ = 0, buffer_count_ = 0;
  bool compute_copy_ = false;
  bool log_softmax_in_loss_ = false;
  DeviceBuffer params_, grads_, buffers_, compute_params_;
  std::unique_ptr<Layer> root_;
};

}  // namespace sb::cuda
