// One fused run of a Sequential: [BatchNorm2d], [BatchNorm2d, ReLU] or [BatchNorm2d, ReLU, Dropout],
// optionally followed by the Residual's add, as the passes of kernels/bn_fused.h
// (y = [shortcut +] dropout(relu(bn(x)))); or a lone BatchNorm2d that ends a bottleneck, taking the add and
// the ReLU after it (y = relu(bn(x) + shortcut)), whose ReLU layer then passes its input through and masks
// the gradient before this run's backward sees it; or [BatchNorm2d, ReLU, MaxPool2d] (a ResNet's stem), whose
// passes pool as they apply and route the pool's gradient as they read it (kernels::BnMaxPool), so that
// neither the normalised tensor nor its gradient exists. A projection shortcut's lone BatchNorm2d may leave
// its apply to the main branch's run that adds it (defer_next_apply, set_residual_run).
// Chosen by the fusion planner (nn/fusion_plan.h); it stands in for the run's layers with their
// semantics: the BN's parameter and buffer views (running statistics updated in place, so checkpoints see
// them), the dropout's mask key from its own name and its step from set_random_stream or the context's
// device step (CUDA graph replays). Where the kernels do not take a tensor (bn_fused_supports), the run's
// separate layers compute it instead, and the plan report says so.
#pragma once
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "kernels/bn_fused.h"
#include "nn/cuda/context.h"
#include "nn/cuda/conv_ops.h"
#include "nn/cuda/device_buffer.h"
#include "nn/cuda/layer.h"
#include "nn/spec.h"

namespace sb::cuda {

// A fused run's per-channel state, c floats a slot: the saved mean and inverse std; a and b of y = x*a + b;
// the sums a convolution may give; -mean and dx's coefficients for a folded backward.
enum BnRunSlot : int64_t { kRunMean, kRunInvStd, kRunA, kRunB, kRunSum, kRunSqSum, kRunNegMean, kRunEqDy, kRunEqX,
                           kRunEqBias, kRunSlots };
template <typename T>
T* run_slot(T* state, BnRunSlot slot, int64_t c) { return state + slot * c; }

class FusedBnRun final : public Layer {
 public:
  // specs: the run's layers in order (BatchNorm2d[, ReLU[, Dropout or MaxPool2d]]). adds_residual: forward adds the
  // tensor given by set_residual. relu_after_add (specs a lone BatchNorm2d, adds_residual): forward applies
  // the ReLU that follows the Residual to the sum.
  FusedBnRun(std::vector<LayerSpec> specs, bool adds_residual, bool relu_after_add, Context& ctx);
  void bind(const ParamViews& views) override;
  void set_random_stream(uint64_t key, uint64_t step) override;
  void set_first_sample(int64_t first) override;
  // The shortcut's output for the next forward (shape and layout of the output), and the bias [c] of a
  // shortcut convolution that left its bias to this pass (or nullptr); both must stay valid until that
  // forward returns.
  void set_residual(const DeviceTensor* residual, const float* residual_bias) {
    residual_ = residual;
    residual_bias_ = residual_bias;
  }
  // Instead, the shortcut's last run, a lone batch norm that deferred its apply (defer_next_apply): the next
  // forward normalises that run's input by its coefficients as it adds it (kernels::BnApply::residual_scale),
  // so that the shortcut's output is never written, or, where this run's kernels do not take the shape, has
  // that run write its output first. It must stay valid until that forward returns.
  void set_residual_run(FusedBnRun* shortcut) { residual_run_ = shortcut; }
  // The gradient of the residual input is dy itself, which the Residual passes to its shortcut.
  const DeviceTensor& forward(const DeviceTensor& x, Mode mode) override;
  const DeviceTensor& backward(const DeviceTensor& dy) override;
  // The output is read by the next forward only, never by a backward (a shortcut's last batch norm, read by
  // the main branch's add; one before a pool that does not read its input in backward): forward writes it
  // into a buffer of the context's gradient pool instead of one of its own, and the container gives that
  // back once the reader's forward is queued. The memory is that of backward's gradients, free in forward.
  // Not for a run that adds the residual or applies the following ReLU (that ReLU's backward reads it).
  void lend_output();
  // Where a convolution before the run may write the sums of the run's next input ([2c] floats: sum, then
  // sum of squares; Conv2d::write_next_output_statistics), and that it did: the next training forward then
  // finalizes them instead of reading its input for them. Holds for one forward.
  float* statistics_target(int64_t channels) { return run_slot(channel_state(channels), kRunSum, channels); }
  void use_given_statistics(int64_t channels) { given_statistics_channels_ = channels; }
  // A [BatchNorm2d, ReLU] run (no dropout, no add) whose backward reduction the dgrad of the convolution
  // reading its output may take (conv_backward_data_bn_relu).
  bool takes_folded_backward() const { return specs_.size() == 2 && !adds_residual_ && !relu_after_add_; }
  // What that dgrad needs from the last training forward (relu_gradient left to the convolution), or nothing
  // where the last forward did not take the fused kernels in Train mode under NHWC.
  std::optional<DgradBatchNorm> folded_backward_inputs();
  // The convolution's dgrad took the reduction: the next backward's dy is the gradient the dgrad masked, and
  // the weight gradients are written; the backward then only writes dx. Holds for one backward.
  void use_folded_backward() { folded_backward_ = true; }
  // The next forward of such a run, or of a lone batch norm (defers_apply_to_add), computes its coefficients
  // but leaves the apply pass to the layer that reads its output (deferred(): it did): the convolution, which
  // applies x * a + b and the ReLU as it loads the run's input (deferred_prologue(), over input()), or the
  // main branch's run that adds this shortcut (set_residual_run); where it cannot, that layer has the run
  // write the output after all (write_deferred_output; apply_into writes it into another buffer, on another
  // stream). The output it returns has no memory until then, so that such a run holds none. Holds for one
  // forward; the coefficients stay valid until the next forward.
  void defer_next_apply() { defer_next_apply_ = true; }
  // A lone BatchNorm2d that neither adds nor applies a ReLU: a projection shortcut's, whose apply the main
  // branch's add may take.
  bool defers_apply_to_add() const { return specs_.size() == 1 && !adds_residual_ && !relu_after_add_; }
  bool deferred() const { return deferred_; }
  const DeviceTensor& input() const { return x_; }
  ConvPrologue deferred_prologue() const;
  const DeviceTensor& write_deferred_output();
  void apply_into(void* out, cudaStream_t stream) const;
  // The run's batch norm, as the plan report names it.
  const std::string& batch_norm_name() const { return specs_[0].name; }
  // Empty, or a line saying which shapes the fused kernels did not take.
  const std::string& fallback_note() const { return fallback_note_; }
  // The ReLU after a block, which may write its output gradient, leaves its mask to the run whose backward
  // reads that gradient first: an identity block's relu_after_add run, masking by its own output, or a
  // projection block's shortcut run (a lone BatchNorm2d, set_following_relu_output), masking by the main
  // branch's relu_after_add run's output. The first backward pass then masks dy and writes it back in place,
  // which saves the ReLU's own pass (kernels::BnBackward::relu_output_bits: a relu_after_add run's training
  // forward stores which outputs are positive, a bit each); the other branch reads it masked.
  void mask_following_relu_gradient() { masks_following_relu_ = relu_output_run() != nullptr; }
  void set_following_relu_output(FusedBnRun* main_run) { following_relu_output_ = main_run; }
  // Such a shortcut run's backward also computes the main run's, both batch norms in each pass
  // (kernels::bn_backward_pair_reduce and _dx: dy read once for the two and masked as it is read; the main
  // run's input gradient is written over dy, which the masking may write), where
  // ContextOptions::shortcut_bn_paired allows it and the masking above holds; the main run's backward then
  // only hands on that input gradient. Whether the last backward did:
  bool paired_last_backward() const { return paired_last_backward_; }
  // Whether the next backward masks that gradient: asked for, and the last forwards of this run and of the
  // run whose output it masks by took the fused kernels in Train mode under NHWC. The ReLU asks this in its
  // backward, after the forward, and passes dy through.
  bool asked_to_mask_following_relu() const { return masks_following_relu_; }
  bool masks_following_relu_gradient() const {
    const FusedBnRun* source = relu_output_run();
    return masks_following_relu_ && source && fused_ && mode_ == Mode::Train && x_.layout() == Layout::NHWC &&
           source->fused_ && source->mode_ == Mode::Train && source->last_relu_bits_;
  }

 private:
  // The Residual's shortcut output that a run adding it was given: present, and of the run's output shape.
  void check_residual(const Shape& shape, const DeviceTensor* residual) const;
  // The coefficients of a fused forward (from the given sums, a statistics pass, or the running statistics)
  // and its apply pass's arguments; the apply finalizes given sums itself where it runs at once.
  kernels::BnApply coefficients_and_apply(const kernels::BnFusedShape& s, const DeviceTensor& x, Mode mode,
                                          int64_t given_channels, bool defer, const DeviceTensor* residual,
                                          const float* residual_bias, const FusedBnRun* residual_run);
  // The apply pass's arguments for the last forward's x_ and y_ (drawing or storing its dropout mask); with
  // residual_run, the residual is that shortcut run's input, normalised by its deferred coefficients.
  kernels::BnApply apply_arguments(const kernels::BnFusedShape& s, const float* state, Mode mode,
                                   const DeviceTensor* residual, const float* residual_bias,
                                   const FusedBnRun* residual_run);
  // The backward passes' arguments for the last forward (workspace given), without the following ReLU's mask.
  kernels::BnBackward backward_arguments(const DeviceTensor& dy, void* workspace) const;
  // The main run whose backward this shortcut run's takes (paired_last_backward), or nullptr.
  FusedBnRun* pair_backward_run() const;
  // Both runs' backward from dy: dx_ and main.dx_, and both runs' weight gradients.
  void backward_as_pair(FusedBnRun& main, const DeviceTensor& dy, const kernels::BnFusedShape& s);
  const DeviceTensor& forward_separately(const DeviceTensor& x, Mode mode, const DeviceTensor* residual,
                                        const float* residual_bias);
  double dropout_p(Mode mode) const;

  bool relu_in_run() const { return specs_.size() > 1; }
  bool has_dropout() const { return specs_.size() > 2 && specs_[2].kind == LayerKind::Dropout; }
  bool has_pool() const { return specs_.size() > 2 && specs_[2].kind == LayerKind::MaxPool2d; }
  // Whether the fused passes take the run's max pool on this input (true where it has none); sets last_pool_,
  // with the positions buffer for a training forward.
  bool max_pool_fits(Mode mode, const kernels::BnFusedShape& s, const DeviceTensor& x);
  // The run whose output is the following ReLU's (see mask_following_relu_gradient), or nullptr.
  const FusedBnRun* relu_output_run() const {
    if (relu_after_add_) return this;
    return specs_.size() == 1 && !adds_residual_ ? following_relu_output_ : nullptr;
  }
  // The per-channel state (BnRunSlot).
  float* channel_state(int64_t c) { return channel_state_.ensure_as<float>(static_cast<size_t>(kRunSlots * c)); }

  std::vector<LayerSpec> specs_;  // [0] BatchNorm2d, [1] ReLU, [2] Dropout or MaxPool2d when present
  bool adds_residual_, relu_after_add_;
  bool masks_following_relu_ = false;  // see mask_following_relu_gradient
  FusedBnRun* following_relu_output_ = nullptr;  // see set_following_relu_output
  bool paired_last_backward_ = false;            // see paired_last_backward
  const void* paired_dy_ = nullptr;  // a main run's: the dy of the backward the shortcut's run computed for it
  bool lends_output_ = false;          // see lend_output
  Context& ctx_;
  ParamViews views_;
  uint64_t mask_key_ = 0, step_ = 0;
  int64_t first_sample_ = 0;
  uint64_t first_element_ = 0;  // the last forward's mask index of its element 0
  const DeviceTensor* residual_ = nullptr;
  const float* residual_bias_ = nullptr;
  FusedBnRun* residual_run_ = nullptr;  // set_residual_run, for the next forward
  std::vector<std::unique_ptr<Layer>> separate_;  // the run's own layers, for shapes the kernels do not take
  bool fused_ = true;                             // the last forward took the fused kernels
  Mode mode_ = Mode::Train;
  double last_p_ = 0.0;                           // the last forward's dropout probability (0 in Eval)
  std::string fallback_note_;
  DeviceTensor x_, y_, dx_;
  DeviceBuffer y_buffer_;
  DeviceBuffer channel_state_;  // channel_state()
  int64_t given_statistics_channels_ = 0;  // use_given_statistics, for the next forward
  bool folded_backward_ = false;           // use_folded_backward, for the next backward
  bool defer_next_apply_ = false;          // defer_next_apply, for the next forward
  bool deferred_ = false;                  // the last forward deferred its apply
  kernels::BnApply deferred_apply_;        // ... with these arguments
  DeviceBuffer keep_bits_;      // the training forward's dropout mask, 1 bit per element (kernels::bn_fused_mask_bytes)
  DeviceBuffer pool_positions_;  // the training forward's maxima positions (kernels::BnMaxPool::positions)
  DeviceBuffer relu_bits_;       // a relu_after_add run's training forward: its positive outputs, a bit each
  uint32_t* last_relu_bits_ = nullptr;  // where the last forward stored them, or nullptr
  kernels::BnMaxPool last_pool_;  // the last fused forward's pool
  uint32_t* last_keep_bits_ = nullptr;  // where the last forward stored its mask, or nullptr (drawn again)
};

}  // namespace sb::cuda
