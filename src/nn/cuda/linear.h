// Linear y = x W^T + b through cuBLAS (cublasGemmEx): fp32 (TF32 tensor cores when the context allows),
// or fp16/bf16 operands with fp32 accumulation. dW is written by the GEMM straight into the fp32 flat
// gradient (fp16/bf16 operands, fp32 output), so no widening pass is needed; the bias and its gradient
// are kernels (kernels/elementwise.h).
#pragma once
#include "nn/cuda/context.h"
#include "nn/cuda/device_buffer.h"
#include "nn/cuda/layer.h"
#include "nn/spec.h"

namespace sb::cuda {

class Linear final : public Layer {
 public:
  Linear(const LayerSpec& spec, Context& ctx);
  void bind(const ParamViews& views) override { views_ = views; }
  const DeviceTensor& forward(const DeviceTensor& x, Mode mode) override;
  const DeviceTensor& backward(const DeviceTensor& dy) override;

 private:
  LayerSpec spec_;
  Context& ctx_;
  ParamViews views_;
  DeviceTensor x_, y_, dx_;
  DeviceBuffer y_buffer_, dx_buffer_;
};

}  // namespace sb::cuda
