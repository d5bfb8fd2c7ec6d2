// Developer switches: the CUDA backend's alternative paths that a run can take instead of the settled
// default, for A/B measurements and for the GPU tests that compare two paths bit for bit. A user never
// needs them, so they are not options: each is an environment variable, read here and nowhere else
// (docs/kernels.md, "Developer switches"). Unset means the default, on.
//   SCALEBENCH_DEV_FUSED_BN=off              batch norm + ReLU (+ dropout, + the residual add) as cuDNN's
//                                            graphs and separate layers instead of scalebench's fused kernels
//   SCALEBENCH_DEV_FUSED_RESIDUAL_GRAD=off   a residual block's gradient sum as an add pass of its own
//                                            instead of its first convolution's dgrad with beta 1
//   SCALEBENCH_DEV_PARALLEL_WGRAD=off        weight gradients on the compute stream, as PyTorch
//   SCALEBENCH_DEV_OPTIMIZER_OVERLAP=off     one optimizer update after every all-reduce
//   SCALEBENCH_DEV_SYMMETRIC_MEMORY=off      gradient buckets (and comm's sizes) all-reduced on plain buffers
#pragma once
#include <string>

namespace sb {

struct DevSwitches {
  bool fused_bn = true;
  bool fused_residual_grad = true;
  bool parallel_wgrad = true;
  bool optimizer_overlap = true;
  bool symmetric_memory = true;
};

// The switches as the environment sets them now; a value other than on/off (true/false, 1/0, yes/no) is
// a UserError naming the variable.
DevSwitches dev_switches();

// "SCALEBENCH_DEV_FUSED_BN=off, ..." for the switches that are off, "" when all are on: for the log.
std::string describe_changed(const DevSwitches& switches);

}  // namespace sb
