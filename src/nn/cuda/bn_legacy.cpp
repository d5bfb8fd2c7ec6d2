#include "nn/cuda/bn_legacy.h"

#include <cudnn.h>

#include "core/cuda_check.h"
#include "core/error.h"

// Deprecated on purpose: this file is the one place that may call the legacy batch-norm API.
#pragma GCC diagnostic ignored "-Wdeprecated-declarations"

namespace sb::cuda {
namespace {

// The descriptors of one legacy call: x/y (same shape, layout and dtype) and the derived per-channel one.
class LegacyDescriptors {
 public:
  LegacyDescriptors(const Context& ctx, const BnShape& s) {
    CHECK_CUDNN(cudnnCreateTensorDescriptor(&data_));
    CHECK_CUDNN(cudnnCreateTensorDescriptor(&channel_));
    const cudnnTensorFormat_t format = ctx.layout() == Layout::NHWC ? CUDNN_TENSOR_NHWC : CUDNN_TENSOR_NCHW;
    const cudnnDataType_t dtype = ctx.compute_dtype() == DType::F32 ? CUDNN_DATA_FLOAT
                                  : ctx.compute_dtype() == DType::F16 ? CUDNN_DATA_HALF
                                                                      : CUDNN_DATA_BFLOAT16;
    CHECK_CUDNN(cudnnSetTensor4dDescriptor(data_, format, dtype, static_cast<int>(s.n), static_cast<int>(s.c),
                                           static_cast<int>(s.h), static_cast<int>(s.w)));
    CHECK_CUDNN(cudnnDeriveBNTensorDescriptor(channel_, data_, CUDNN_BATCHNORM_SPATIAL));
  }
  ~LegacyDescriptors() {
    cudnnDestroyTensorDescriptor(data_);
    cudnnDestroyTensorDescriptor(channel_);
  }
  LegacyDescriptors(const LegacyDescriptors&) = delete;
  LegacyDescriptors& operator=(const LegacyDescriptors&) = delete;
  cudnnTensorDescriptor_t data() const { return data_; }
  cudnnTensorDescriptor_t channel() const { return channel_; }

 private:
  cudnnTensorDescriptor_t data_ = nullptr, channel_ = nullptr;
};

const float kOne = 1.0f, kZero = 0.0f;

// False where cuDNN has no kernel for this configuration; any other failure ends the job.
bool supported(cudnnStatus_t status, const char* call) {
  if (status == CUDNN_STATUS_NOT_SUPPORTED) return false;
  if (status != CUDNN_STATUS_SUCCESS) fatal_call(__FILE__, __LINE__, call, cudnnGetErrorString(status));
  return true;
}

}  // namespace

bool bn_forward_training_legacy(Context& ctx, const BnShape& s, const BnForwardTraining& a) {
  const LegacyDescriptors d(ctx, s);
  // The legacy call updates the running statistics in place: start the outputs from the inputs.
  const size_t bytes = static_cast<size_t>(s.c) * sizeof(float);
  CHECK_CUDA(cudaMemcpyAsync(a.running_mean_out, a.running_mean_in, bytes, cudaMemcpyDeviceToDevice, ctx.stream()));
  CHECK_CUDA(cudaMemcpyAsync(a.running_var_out, a.running_var_in, bytes, cudaMemcpyDeviceToDevice, ctx.stream()));
  return supported(cudnnBatchNormalizationForwardTraining(
                       ctx.cudnn(), CUDNN_BATCHNORM_SPATIAL, &kOne, &kZero, d.data(), a.x, d.data(), a.y, d.channel(),
                       a.scale, a.bias, static_cast<double>(*a.momentum), a.running_mean_out, a.running_var_out,
                       static_cast<double>(*a.epsilon), a.saved_mean, a.saved_inv_std),
                   "cudnnBatchNormalizationForwardTraining");
}

bool bn_forward_inference_legacy(Context& ctx, const BnShape& s, const void* x, void* y, const float* scale,
                                 const float* bias, const float* running_mean, const float* running_var, double eps) {
  const LegacyDescriptors d(ctx, s);
  return supported(cudnnBatchNormalizationForwardInference(ctx.cudnn(), CUDNN_BATCHNORM_SPATIAL, &kOne, &kZero,
                                                           d.data(), x, d.data(), y, d.channel(), scale, bias,
                                                           running_mean, running_var, eps),
                   "cudnnBatchNormalizationForwardInference");
}

bool bn_backward_legacy(Context& ctx, const BnShape& s, const BnBackward& a, double eps) {
  const LegacyDescriptors d(ctx, s);
  return supported(cudnnBatchNormalizationBackward(ctx.cudnn(), CUDNN_BATCHNORM_SPATIAL, &kOne, &kZero, &kOne, &kZero,
                                                   d.data(), a.x, d.data(), a.dy, d.data(), a.dx, d.channel(), a.scale,
                                                   a.dscale, a.dbias, eps, a.saved_mean, a.saved_inv_std),
                   "cudnnBatchNormalizationBackward");
}

}  // namespace sb::cuda
