// THE ISOLATED LEGACY FALLBACK (docs/cudnn.md): cuDNN 9's deprecated cudnnBatchNormalization* calls, used
// only for a batch-norm shape/dtype/layout for which no graph-API engine builds a plan (bn_ops.h returns
// false), or when ContextOptions::batchnorm_path legacy forces them. Same arguments and results as the graph versions,
// so a layer can mix them (e.g. graph forward, legacy backward). No ReLU fusion here: the caller applies
// the ReLU kernel. Each returns false where cuDNN has no kernel for the configuration
// (CUDNN_STATUS_NOT_SUPPORTED); any other failure ends the job.
#pragma once
#include "nn/cuda/bn_ops.h"

namespace sb::cuda {

// Writes running_*_out = (1-momentum)*running_*_in + momentum*batch statistic (unbiased variance).
bool bn_forward_training_legacy(Context& ctx, const BnShape& s, const BnForwardTraining& a);

// Uses the running mean and variance directly (not the inverse std of the graph version).
bool bn_forward_inference_legacy(Context& ctx, const BnShape& s, const void* x, void* y, const float* scale,
                                 const float* bias, const float* running_mean, const float* running_var, double eps);

bool bn_backward_legacy(Context& ctx, const BnShape& s, const BnBackward& a, double eps);

}  // namespace sb::cuda
