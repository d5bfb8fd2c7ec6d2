// Sequential and residual containers over CUDA layers, binding their children's views in spec order.
// Sequential runs its children as the fusion planner (nn/fusion_plan.h) says: runs of BatchNorm2d, ReLU
// (and Dropout, and the Residual's add) as one FusedBnRun, BatchNorm2d + ReLU pairs as one cuDNN graph,
// the rest as their own layers; the small-network patterns (a first convolution, conv + pool, Linear + ReLU)
// as the layers make_fused_layer (nn/cuda/factory.h) builds.
#pragma once
#include <memory>
#include <string>
#include <vector>

#include "nn/cuda/context.h"
#include "nn/cuda/device_buffer.h"
#include "nn/cuda/layer.h"
#include "nn/spec.h"

namespace sb::cuda {

class FusedBnRun;
class Conv2d;

class Sequential final : public Layer {
 public:
  // residual_main: the Sequential is a Residual's main branch, whose add a final fused run may take.
  // network_input: the Sequential is the network's root (its first layer's input gradient is never read).
  // relu_after_residual: that final run also applies the ReLU that follows the Residual.
  Sequential(const LayerSpec& spec, Context& ctx, bool residual_main = false, bool network_input = false,
             bool relu_after_residual = false);
  void bind(const ParamViews& views) override;
  void set_random_stream(uint64_t key, uint64_t step) override;
  void set_first_sample(int64_t first) override;
  const DeviceTensor& forward(const DeviceTensor& x, Mode mode) override;
  const DeviceTensor& backward(const DeviceTensor& dy) override;

  // Whether forward adds the tensor of set_residual (its last run took the Residual's add).
  bool adds_residual() const { return residual_run_ != nullptr; }
  FusedBnRun* residual_run() const { return residual_run_; }
  void set_residual(const DeviceTensor* residual, const float* residual_bias);
  // The shortcut's last run, whose deferred apply the last run takes (FusedBnRun::set_residual_run).
  void set_residual_run(FusedBnRun* shortcut);
  // The plan of this container and those inside it, one line per run or pair.
  std::string fusion_report() const;
  // The output gradient is a buffer that nothing reads after this container's backward: its last step
  // may write into it (a ReLU masks it in place, a Residual adds into it).
  void allow_writing_output_gradient();
  // The layers that run first and last (null for an empty container).
  Layer* first_layer() const { return steps_.empty() ? nullptr : steps_.front().layer.get(); }
  Layer* last_layer() const { return steps_.empty() ? nullptr : steps_.back().layer.get(); }

 private:
  struct Step {
    std::unique_ptr<Layer> layer;
    int64_t params = 0, buffers = 0;  // flat-buffer elements of the specs the step covers
    std::string label;                // the specs' names, '+'-joined, for the per-layer profile
    bool container = false;           // a Sequential or Residual: its own steps are timed, not it
    bool lends_output = false;        // a FusedBnRun whose output the next step alone reads, in forward
    FusedBnRun* statistics_to = nullptr;  // a Conv2d's: the next step, a fused run, takes its epilogue's sums
    bool statistics_written = false;      // ... and the last training forward wrote them
    FusedBnRun* backward_of = nullptr;    // a Conv2d's: the step before, a [BatchNorm2d, ReLU] run whose
                                          // backward reduction the dgrad may take
    bool backward_folded = false;         // ... and the last backward's dgrad took it
    Conv2d* applied_by = nullptr;         // a fused run's: the next step, a Conv2d that may apply it
    bool apply_folded = false;            // ... and the last forward's convolution did
  };
  // Which convolutions take which batch-norm run's passes (ContextOptions::fold_batch_norm and
  // fold_bn_statistics), set once the steps exist.
  void pair_folds(const ContextOptions& options);

  Context& ctx_;
  std::vector<Step> steps_;
  FusedBnRun* residual_run_ = nullptr;
  std::string plan_record_;
};

// y = main(x) + shortcut(x), with an identity shortcut when the spec has none. When the main branch's
// last run takes the add, the shortcut runs first and main's output is y; where the shortcut ends in a lone
// batch norm, that run computes its coefficients only and the main branch's run applies them to the
// shortcut's convolution output as it adds it (ContextOptions::shortcut_bn_in_add).
// Backward: dx = da + db, the shortcut's gradient db first (see backward). Where the main branch starts with
// a convolution, that convolution's dgrad adds db in its epilogue (Conv2d::add_next_input_gradient_to,
// cuDNN's beta 1) and no add pass runs (ContextOptions::fuse_residual_grad):
// - a projection shortcut: db is the shortcut's own input-gradient buffer, which nothing else reads;
// - an identity shortcut: db is dy itself, so the dgrad adds into dy in place, only where that is safe:
//   every reader of dy in the main branch runs on the compute stream before the dgrad (its last layer has
//   no weight-gradient-stream work), and dy is the input gradient of the next layer of the enclosing
//   Sequential, a buffer that nothing reads after this block (allow_writing_output_gradient). Elsewhere (a
//   block that is a network's last layer, or under a Flatten) the add pass stays.
class Residual final : public Layer {
 public:
  // relu_follows: the fusion plan gave the ReLU after this block to the main branch's last batch-norm run
  // (FusionPath::ResidualThenRelu); the block's output is then relu(main + shortcut).
  Residual(const LayerSpec& spec, Context& ctx, bool relu_follows = false);
  void bind(const ParamViews& views) override;
  void set_random_stream(uint64_t key, uint64_t step) override;
  void set_first_sample(int64_t first) override;
  const DeviceTensor& forward(const DeviceTensor& x, Mode mode) override;
  const DeviceTensor& backward(const DeviceTensor& dy) override;
  std::string fusion_report() const;
  // The output gradient is a buffer that nothing reads after this block's backward (the layer above wrote
  // it and is done with it): an identity block's backward may add into it (see the class comment).
  void allow_writing_output_gradient() { dy_writable_ = true; }
  // Whether forward applied the following ReLU (relu_follows, and the main branch took the add).
  bool applies_following_relu() const { return relu_follows_ && fused_add_main_; }
  // The run that may mask the following ReLU's gradient in its backward (FusedBnRun::
  // mask_following_relu_gradient), in a block that applies that ReLU: the first to read dy, which leaves it
  // masked in place for the other branch. In an identity block the main branch's last run; in a projection
  // block the shortcut's last run (its backward runs first), where that is a lone batch norm on the fused
  // kernels; null elsewhere.
  FusedBnRun* following_relu_mask_run() const { return following_relu_mask_run_; }

 private:
  // The branches and the add, each timed by the context's layer timer when one is set.
  const DeviceTensor& run_main(const DeviceTensor& t, bool backward, Mode mode);
  const DeviceTensor& run_shortcut(const DeviceTensor& t, bool backward, Mode mode);
  // a + b into `buffer` (forward), or into a shared gradient buffer (backward: buffer null).
  const DeviceTensor& add(const DeviceTensor& a, const DeviceTensor& b, DeviceBuffer* buffer, DeviceTensor& out,
                          bool backward);
  // Whether backward leaves dx = da + db to the main branch's first dgrad.
  bool adds_in_dgrad() const { return grad_sum_conv_ && (shortcut_ || dy_writable_); }

  LayerSpec spec_;
  Context& ctx_;
  std::unique_ptr<Layer> main_, shortcut_;
  bool main_is_container_ = false, shortcut_is_container_ = false;
  Sequential* fused_add_main_ = nullptr;  // main_, when it takes the add
  Conv2d* shortcut_conv_ = nullptr;       // shortcut_, a convolution whose bias that add takes
  Conv2d* grad_sum_conv_ = nullptr;       // main_'s first layer, when its dgrad may add the shortcut's gradient
  bool dy_writable_ = false;              // see allow_writing_output_gradient
  bool relu_follows_ = false;
  bool shortcut_lends_output_ = false;  // the shortcut's last run lends its output (FusedBnRun::lend_output)
  // The shortcut's last run, a lone batch norm whose apply the main branch's add takes
  // (ContextOptions::shortcut_bn_in_add), or null.
  FusedBnRun* shortcut_apply_run_ = nullptr;
  FusedBnRun* following_relu_mask_run_ = nullptr;  // see following_relu_mask_run
  DeviceTensor y_, dx_;
  DeviceBuffer y_buffer_;
};

// The fusion plan of a layer tree, for the plan report (empty for layers that are not containers).
std::string fusion_report(const Layer& root);

}  // namespace sb::cuda
