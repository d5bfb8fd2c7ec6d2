// Batch normalisation (spatial: statistics per channel over N, H, W) through cuDNN's graph API:
// CUDNN_BACKEND_OPERATION_NORM_FORWARD_DESCRIPTOR (training and inference phases) and
// NORM_BACKWARD_DESCRIPTOR, with an optional ReLU fused after the forward. x, y, dy and dx are in the
// context's compute dtype and layout; scale, bias, statistics and their gradients are fp32.
// Each function returns false when no engine runs its graph; the caller then takes its next path or, when
// the path is forced, stops (batchnorm2d.h).
#pragma once
#include <cstdint>

#include "nn/cuda/context.h"

namespace sb::cuda {

struct BnShape {
  int64_t n, c, h, w;
};

struct BnForwardTraining {
  const void* x = nullptr;
  void* y = nullptr;
  const float* scale = nullptr;
  const float* bias = nullptr;
  float* saved_mean = nullptr;      // [c], for backward
  float* saved_inv_std = nullptr;   // [c], 1/sqrt(batch var + eps)
  const float* running_mean_in = nullptr;
  const float* running_var_in = nullptr;
  float* running_mean_out = nullptr;  // (1-momentum)*in + momentum*batch mean; must not alias the inputs
  float* running_var_out = nullptr;   // the same with the unbiased batch variance
  const float* epsilon = nullptr;     // host scalars, passed by value
  const float* momentum = nullptr;
  bool relu = false;                  // y = max(bn(x), 0) in the same graph
};
bool bn_forward_training_graph(Context& ctx, const BnShape& s, const BnForwardTraining& a);

struct BnForwardInference {
  const void* x = nullptr;
  void* y = nullptr;
  const float* scale = nullptr;
  const float* bias = nullptr;
  const float* mean = nullptr;     // running mean
  const float* inv_std = nullptr;  // 1/sqrt(running var + eps)
  bool relu = false;
};
bool bn_forward_inference_graph(Context& ctx, const BnShape& s, const BnForwardInference& a);

struct BnBackward {
  const void* x = nullptr;
  const void* dy = nullptr;
  const float* scale = nullptr;
  const float* saved_mean = nullptr;
  const float* saved_inv_std = nullptr;
  float* dscale = nullptr;  // written, not accumulated
  float* dbias = nullptr;
  void* dx = nullptr;
};
bool bn_backward_graph(Context& ctx, const BnShape& s, const BnBackward& a);

// Inference as a per-channel affine map through pointwise nodes: y = x * a[c] + b[c] (then ReLU), with a
// and b from kernels::bn_inference_coefficients (kernels/batchnorm.h). For when no engine runs the
// NORM_FORWARD inference phase.
struct BnAffine {
  const void* x = nullptr;
  void* y = nullptr;
  const float* a = nullptr;
  const float* b = nullptr;
  bool relu = false;
};
bool bn_affine_graph(Context& ctx, const BnShape& s, const BnAffine& args);

}  // namespace sb::cuda
