// The fused optimizer step: ONE launch updates the whole flat fp32 master buffer (docs/architecture.md,
// "Flat buffers"), or one element range of it (a gradient bucket's, with the optimizer overlap), with
// torch.optim's semantics. The per-element maths is literally the CPU optimizers': the
// kernel calls the SB_HOST_DEVICE update functions of src/maths/optimizer_update_rules.h.
// This interface depends on nothing above core/: the hyper-parameters come as the plain structs below,
// which the callers fill from the optimizer configs of src/optim/ (optim/cuda/fused_step_hyperparameters.h).
//
// For a CUDA graph, nothing that changes between steps is a kernel argument: the learning rate can be read
// from device memory (lr_device) and the step number from a device counter that the kernel advances
// itself (step_counter), and the whole update is skipped, counter included, when the device flag
// found_inf is set (fp16 dynamic loss scaling, kernels/amp.h), as torch's GradScaler skips
// optimizer.step(). The step scalars (bias corrections in double) are then computed on the device, by the
// same formulas as optimizer_update_rules.h's *_step_scalars.
#pragma once
#include <cuda_runtime_api.h>

#include <cstdint>

#include "core/dtype.h"

namespace sb::kernels {

enum class OptimizerKind {
  Sgd,       // SgdHyperparameters: momentum, dampening, Nesterov, L2 weight decay
  Adadelta,  // AdadeltaHyperparameters
  Adam,      // AdamHyperparameters: Adam, or AdamW when decoupled_weight_decay, AMSGrad too
};

// The fields of sb::SgdConfig, sb::AdadeltaConfig and sb::AdamConfig (src/optim/optim_config.h, which
// documents them and holds torch's defaults); all zero here, so a caller always converts a config.
struct SgdHyperparameters {
  double momentum = 0.0;
  double dampening = 0.0;
  bool nesterov = false;
  double weight_decay = 0.0;
};
struct AdadeltaHyperparameters {
  double rho = 0.0;
  double eps = 0.0;
  double weight_decay = 0.0;
};
struct AdamHyperparameters {
  double beta1 = 0.0;
  double beta2 = 0.0;
  double eps = 0.0;
  double weight_decay = 0.0;
  bool decoupled_weight_decay = false;
  bool amsgrad = false;
};

// Device memory, zero-initialised by the owner (set steps to restore a checkpoint).
struct OptimizerStepCounter {
  int64_t steps;             // updates applied so far: the CPU Optimizer's step_count()
  unsigned int blocks_done;  // the kernel's own bookkeeping; leave it 0
  unsigned int unused;
};

struct FusedOptimizerArgs {
  OptimizerKind kind = OptimizerKind::Sgd;
  SgdHyperparameters sgd;  // only the one that `kind` names is read
  AdadeltaHyperparameters adadelta;
  AdamHyperparameters adam;

  int64_t n = 0;                  // elements of every buffer below
  // The elements this launch updates: [offset, offset + count) of every buffer (params_copy included);
  // count < 0: all n. One launch per gradient bucket updates that bucket's parameters as soon as its
  // all-reduce is done (docs/architecture.md, "The streams of a step").
  int64_t offset = 0;
  int64_t count = -1;
  float* params = nullptr;        // fp32 master weights, updated in place
  const float* grads = nullptr;   // fp32 gradients (already averaged across ranks)
  // With a range (count >= 0): where its count gradients are when not at grads + offset (a bucket's
  // average in the symmetric window; train/engines/cuda/gradient_buckets.h); nullptr: at grads + offset.
  const float* range_grads = nullptr;
  // Optimizer state, n floats each, zero-initialised, in the CPU optimizer's state() order:
  //   Sgd with momentum > 0: [0] momentum_buffer;  Adadelta: [0] square_avg, [1] acc_delta;
  //   Adam: [0] exp_avg, [1] exp_avg_sq, [2] max_exp_avg_sq (AMSGrad only).
  float* state[3] = {nullptr, nullptr, nullptr};

  // Learning rate: *lr_device when not null (so a captured graph sees the schedule), else lr.
  double lr = 0.0;
  const double* lr_device = nullptr;
  // Step number: step_counter->steps + 1 when step_counter is not null (then advanced by the kernel
  // unless the step is skipped), else `step` (1-based, as Optimizer::update's).
  int64_t step = 1;
  OptimizerStepCounter* step_counter = nullptr;
  // Whether this launch advances step_counter. A step split into ranged launches queues them on one
  // stream, every one but the last with false: each reads the same step number (Adam's bias correction
  // must see step t in every range), and the last one queued advances the counter once.
  bool advances_step_counter = true;

  // fp16 loss scaling (optional): skip everything when *found_inf != 0; divide each gradient by
  // *loss_scale on the fly (torch's unscale_, fused: the gradients are read once and never rewritten).
  const int32_t* found_inf = nullptr;
  const float* loss_scale = nullptr;

  // Optional low-precision copy of the updated weights (F16 or BF16) for the forward, written in the
  // same pass.
  void* params_copy = nullptr;
  DType copy_dtype = DType::BF16;
};

void fused_optimizer_step(const FusedOptimizerArgs& args, cudaStream_t stream);

}  // namespace sb::kernels
