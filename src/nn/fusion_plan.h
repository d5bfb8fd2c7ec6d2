// The fusion planner of the CUDA containers: which layers of a Sequential run as one fused pass, which as
// cuDNN's BN+ReLU graph, and which separately. Pure host logic over the specs (no CUDA), so that its
// choices are tested with made-up availabilities.
//
// Patterns, tried at each BatchNorm2d in order:
//   [BatchNorm2d, ReLU, Dropout]  -> the fused kernels (no cuDNN pattern takes a dropout)
//   [BatchNorm2d, ReLU, MaxPool2d] -> the fused kernels, pooling as they apply (NHWC windows that overlap or
//                                    are padded: a ResNet's stem)
//   [BatchNorm2d, ReLU] (+ add)   -> the fused kernels, taking the Residual's add when the run ends the
//                                    main branch of a Residual
//   [BatchNorm2d, ReLU]           -> cuDNN's BN+ReLU graph when the fused kernels are off or cannot take
//                                    the channel count (their dropout then runs as its own layer)
//   [BatchNorm2d] (+ add (+ ReLU)) -> the fused kernels; at the end of a Residual's main branch the run takes
//                                    the add, and the ReLU that follows the Residual (torchvision's blocks:
//                                    relu(bn(conv(...)) + shortcut)), whose layer then only masks the gradient
// and, at each Residual followed by a ReLU whose main branch ends in a BatchNorm2d that the fused kernels
// take, that ReLU goes into the branch's last run (ResidualThenRelu, then ReluInPrevious).
// Then, among the layers no batch-norm run took, the small-network patterns (layer_kernels):
//   [Conv2d C->K 3x3 (+ bias), (ReLU)] first in the network, C <= 4 -> our first-convolution kernels (no input
//                                    gradient)
//   [Conv2d + bias, ReLU, MaxPool2d 2x2, (Dropout), Flatten] -> cuDNN's convolution, then one kernel of ours
//                                    for bias + ReLU + pool + dropout + flatten (and one back)
//   [Linear, ReLU, (Dropout)]        -> the Linear's GEMM epilogue applies the ReLU, the dropout in place
// Everything else runs as its own layer.
//
// One choice spans the network and its loss: a network whose root Sequential ends in LogSoftmax, trained
// with NLL, may leave the LogSoftmax to the loss kernel, which then computes softmax cross-entropy on the
// logits (nll(log_softmax(z)) = ce(z), with the same gradient), saving the layer's forward and backward
// launches. The CUDA engine asks for it (cuda::NetworkOutput::LogitsForLoss); a network built for its
// output keeps the layer, so it still returns log-probabilities.
#pragma once
#include <cstddef>
#include <string>
#include <vector>

#include "core/dtype.h"
#include "nn/spec.h"

namespace sb {

// What the CUDA side offers.
struct FusionAvailability {
  bool fused_kernels = true;        // kernels/bn_fused.h
  bool cudnn_bn_relu = true;        // cuDNN's BatchNorm2d + ReLU forward graph
  bool fuse_plain_bn_relu = true;   // a run with neither dropout nor add ([BatchNorm2d, ReLU] of a stem, a lone
                                    // BatchNorm2d of a shortcut) takes the fused kernels too; off: cuDNN's graphs
  Layout layout = Layout::NCHW;     // the fused kernels need c % 8 == 0 in NHWC (the rows are checked per shape)
  bool layer_kernels = true;        // the small-network patterns (kernels/small_conv.h, kernels/pool_dropout.h,
                                    // the Linear's fused ReLU)
  bool pool_in_run = true;          // a fused [BatchNorm2d, ReLU] run takes the max pool after it; off: the
                                    // pool is its own layer
};

enum class FusionPath {
  Separate,         // its own layer
  FusedHead,        // first layer of a fused run: the run's layer is built here
  FusedMember,      // later layer of a fused run: no layer of its own
  CudnnBnRelu,      // BatchNorm2d with the following ReLU in its cuDNN graph
  ReluInPrevious,   // a ReLU the previous step applied (a CudnnBnRelu pair, a ResidualThenRelu): passes
                    // through, masks the gradient
  ResidualThenRelu, // a Residual whose main branch's last batch-norm run also applies the following ReLU
  FirstConv,        // the network's first Conv2d (at most 4 input channels), and its ReLU as a FusedMember
  ConvReluPool,     // Conv2d, ReLU, 2x2 MaxPool2d, optional Dropout and Flatten: FusedMember follow
  LinearRelu,       // Linear with its ReLU (and Dropout) in the layer: FusedMember follow
};
const char* fusion_path_name(FusionPath path);

struct FusionStep {
  FusionPath path = FusionPath::Separate;
  size_t run = 1;             // FusedHead: how many layers the run covers
  bool adds_residual = false;  // FusedHead: the run also adds the Residual's shortcut
  bool relu_after_add = false; // FusedHead of a lone BatchNorm2d: the ReLU after the Residual applies to the sum
};

struct FusionPlan {
  std::vector<FusionStep> steps;  // one per child spec
  std::string record;             // one line per fused or paired run, for the plan report
};

// `children`: a Sequential's child specs. `ends_residual_main`: the Sequential is the main branch of a
// Residual, whose add a fused run at its very end may take. `network_input`: the Sequential is the network's
// root, so its first layer's input gradient is never read. `relu_after_residual`: the enclosing plan gave
// that Residual's following ReLU to this branch (ResidualThenRelu).
FusionPlan plan_fusion(const std::vector<LayerSpec>& children, const FusionAvailability& available,
                       bool ends_residual_main, bool network_input = false, bool relu_after_residual = false);

// Whether our small-network kernels take this many channels (a power of two up to 256, so that a block's
// threads share them out; kernels/small_conv.h and kernels/pool_dropout.h check the same).
bool layer_kernels_take_channels(int64_t channels);

// The most input channels of the first-convolution kernels (kernels/small_conv.h's kFirstConvMaxChannels,
// which nn/cuda/first_conv.cpp checks is the same).
inline constexpr int64_t kFirstConvMaxInputChannels = 4;

// The words of a fused run's plan-report line, and of the note a fused run adds when the kernels refuse
// its shape at the first forward (nn/cuda/bn_fused_run.cpp).
inline constexpr char kFusedKernelsRecord[] = ": fused kernels";
inline constexpr char kRefusedByFusedKernels[] = " not taken by the fused kernels";
// The end of a small-network pattern's plan-report line ("conv1 + relu1: first-conv kernel" + this).
inline constexpr char kLayerKernelsRecord[] = " (fused layers)";
// The ends of a convolution's line when it writes the next batch norm's sums in its epilogue
// (ContextOptions::fold_batch_norm), or was asked to and no engine runs that graph:
// "conv1 -> bn1+relu1" + one of these.
inline constexpr char kStatisticsInConvRecord[] = ": batch-norm statistics in the convolution";
inline constexpr char kStatisticsPassRecord[] = ": batch-norm statistics by their own pass (no engine)";
// The same for a convolution's dgrad that takes the backward reduction of the [BatchNorm2d, ReLU] run before
// it: "bn1+relu1 <- conv2" + one of these.
inline constexpr char kBackwardInDgradRecord[] = ": batch-norm backward reduction in the dgrad";
inline constexpr char kBackwardPassRecord[] = ": batch-norm backward reduction by its own pass (no engine)";
// And for a [BatchNorm2d, ReLU] run whose apply the next convolution takes into its prologue (forward and
// weight gradient): "bn1+relu1 => conv2" + one of these.
inline constexpr char kApplyInPrologueRecord[] = ": batch-norm apply in the convolution's prologue";
inline constexpr char kApplyPassRecord[] = ": batch-norm apply by its own pass (no engine)";

// Whether the loss may take `root`'s trailing LogSoftmax: a Sequential of more than one child whose last
// child is a LogSoftmax.
bool ends_in_log_softmax(const LayerSpec& root);
// The plan-report line of that choice, for the LogSoftmax `layer`:
// "log_softmax: softmax cross-entropy in the loss kernel (fused layers)".
std::string log_softmax_in_loss_record(const LayerSpec& layer);

// One line for the run's log from a network's plan report (the records of its containers, one line per
// batch-norm run or small-network pattern): how many batch-norm runs take the fused kernels, each other
// run's line with its reason, the fused small-network patterns, and how many batch norms take their statistics
// from the convolution before them (naming those that could not). Empty when the report holds none.
std::string fusion_summary(const std::string& report);

}  // namespace sb
