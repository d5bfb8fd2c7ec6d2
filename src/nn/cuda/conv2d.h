// Conv2d through cuDNN's graph API (fprop, dgrad, wgrad), with an optional bias.
//
// Weights: cuDNN takes KCRS filters under NCHW and KRSC under NHWC. A network stores its filters in the
// order its layout needs (ParamViews::filters_krsc, nn/filter_order.h), so the compute-dtype copy is used as
// it is; a layer bound to [K, C, R, S] views under NHWC transposes its weights in every forward instead.
// Gradients: fp32 compute writes dw straight into the fp32 flat gradient where the orders agree; bf16/fp16
// compute has cuDNN write dw in the compute dtype (the fast wgrad engines, docs/cudnn.md) and a kernel then
// widens it into the fp32 gradient (transposing it back from KRSC in the same pass where the gradient is
// [K, C, R, S]). The weight and bias gradients run on the context's weight-gradient stream, beside dgrad
// (Context::begin_weight_gradient). The bias is added by a kernel, or fused into the fprop graph when the
// context asks for it and an engine runs that graph.
#pragma once
#include <optional>

#include "nn/cuda/bn_fused_run.h"
#include "nn/cuda/context.h"
#include "nn/cuda/conv_ops.h"
#include "nn/cuda/device_buffer.h"
#include "nn/cuda/layer.h"
#include "nn/spec.h"

namespace sb::cuda {

class Conv2d final : public Layer {
 public:
  Conv2d(const LayerSpec& spec, Context& ctx);
  void bind(const ParamViews& views) override { views_ = views; }
  const DeviceTensor& forward(const DeviceTensor& x, Mode mode) override;
  const DeviceTensor& backward(const DeviceTensor& dy) override;
  // The layer takes the network's input, whose gradient nobody reads: backward computes no dx (no dgrad).
  void skip_input_gradient() { skip_dx_ = true; }
  bool has_bias() const { return spec_.bias; }
  int64_t input_channels() const { return spec_.in; }
  int64_t output_channels() const { return spec_.out; }
  // The consumer of the output adds bias() itself (a Residual's fused pass): forward writes the
  // convolution alone. Backward still computes the bias gradient.
  void leave_bias_to_consumer() { bias_by_consumer_ = true; }
  const float* bias() const { return spec_.bias ? views_.params + weight_count() : nullptr; }
  // Whether backward computes dx (false for the network's first layer).
  bool computes_input_gradient() const { return !skip_dx_; }
  // The next backward adds its dx into `sum` (of the input's shape, dtype and layout; it holds another
  // gradient of the same input, a Residual's shortcut gradient) and returns `sum`, instead of writing its own
  // dx buffer: cuDNN's dgrad with beta 1, or the plain dgrad and an add where no engine runs that graph.
  // Holds for one backward.
  void add_next_input_gradient_to(const DeviceTensor& sum) { sum_ = sum; }
  // The next training forward also writes the per-channel sum and sum of squares of its output into
  // `sum_sqsum` ([2k] floats: sum, then sum of squares) in the convolution's epilogue, where an engine runs
  // that graph and the layer adds no bias of its own; wrote_output_statistics() says whether it did. Holds
  // for one forward.
  void write_next_output_statistics(float* sum_sqsum) { statistics_target_ = sum_sqsum; }
  bool wrote_output_statistics() const { return wrote_statistics_; }
  // The next backward's dgrad also takes the backward reduction of the [BatchNorm2d, ReLU] run whose output
  // is this layer's input (conv_backward_data_bn_relu, where an engine runs it; bn.relu_gradient is the
  // layer's own dx): its dx is then the gradient at the run's output masked by the ReLU, and the run's weight
  // gradients are written. folded_input_gradient() says whether it did. Holds for one backward.
  void fold_next_input_gradient(const DgradBatchNorm& bn) { fold_ = bn; }
  bool folded_input_gradient() const { return folded_; }
  // The next forward reads its input through the deferred apply of the fused run that produced it
  // (FusedBnRun::defer_next_apply; that run's output is left unwritten): the convolution applies x * a + b and
  // the ReLU to the run's input as it loads it, in forward and in its weight gradient, where engines run
  // those graphs. Where the forward's is missing, the run writes its output after all (FusedBnRun::apply_into);
  // where the weight gradient's is, the normalised input is written for it on the weight-gradient stream. The
  // choice is made at every call (a missing graph is remembered by the plan cache), so that a step captured
  // in a CUDA graph and its eager twin do the same work. Holds for one forward; the run must outlive the next
  // backward.
  void read_next_input_through(FusedBnRun* run) { prologue_source_ = run; }
  bool read_input_through_prologue() const { return prologue_run_ != nullptr; }

 private:
  int64_t weight_count() const { return conv_weight_count(spec_); }
  const void* compute_weights();  // in the filter layout cuDNN gets (KCRS or KRSC)
  // dx into the buffer backward returns: its own, or sum_'s (which it clears).
  void input_gradient(const DeviceTensor& dy);
  // The forward through the source run's prologue (read_next_input_through); false where no engine runs it.
  bool forward_through_prologue(const FusedBnRun& source, float* statistics);
  // The convolution of x_ (bias added), with the next batch norm's sums where asked and an engine runs that.
  void forward_plain(float* statistics);
  // dw of the last forward's input (through its prologue where it read one) on `stream`.
  void weight_gradient(const DeviceTensor& dy, void* dw, DType dw_dtype, cudaStream_t stream);

  LayerSpec spec_;
  Context& ctx_;
  ParamViews views_;
  ConvGeometry geometry_{};
  DeviceTensor x_, y_, dx_;
  DeviceTensor sum_;  // set by add_next_input_gradient_to; empty otherwise
  const void* w_ = nullptr;  // the weights the last forward used (valid until the next forward)
  bool skip_dx_ = false;
  bool bias_by_consumer_ = false;
  float* statistics_target_ = nullptr;  // set by write_next_output_statistics
  bool wrote_statistics_ = false;
  std::optional<DgradBatchNorm> fold_;  // set by fold_next_input_gradient
  bool folded_ = false;
  FusedBnRun* prologue_source_ = nullptr;     // set by read_next_input_through
  const FusedBnRun* prologue_run_ = nullptr;  // the run whose prologue the last forward read through, or none
  ConvPrologue prologue_{};
  DeviceBuffer normalised_;  // the normalised input, where the weight gradient has no engine with the prologue
  DeviceBuffer y_buffer_, w_krsc_;
};

}  // namespace sb::cuda
