// Linear y = x W^T + b through cuBLASLt, its epilogue adding the bias (and applying the following ReLU
// when the containers fuse it in), or through cuBLAS (cublasGemmEx) with the bias and ReLU as kernels
// (kernels/elementwise.h) where cuBLASLt offers no algorithm. fp32 (TF32 tensor cores when the context
// allows), or fp16/bf16 operands with fp32 accumulation. dW is written by the GEMM straight into the fp32
// flat gradient (fp16/bf16 operands, fp32 output), so no widening pass is needed, and its epilogue sums the
// bias gradient from dy (BGRADB) in the same pass. The weight and bias gradients run on the context's
// weight-gradient stream, beside dgrad (Context::begin_weight_gradient).
//
// With a fused ReLU (and dropout after it), the output is dropout(relu(x W^T + b)), the dropout drawn in
// place by kernels/dropout.h with the Dropout layer's mask; backward masks dy by that output alone
// (kernels/relu_dropout.h), so the ReLU and dropout cost one pass each way instead of two.
#pragma once
#include <cstdint>
#include <string>

#include "nn/cuda/context.h"
#include "nn/cuda/device_buffer.h"
#include "nn/cuda/layer.h"
#include "nn/cuda/lt_matmul.h"
#include "nn/spec.h"

namespace sb::cuda {

class Linear final : public Layer {
 public:
  Linear(const LayerSpec& spec, Context& ctx);
  void bind(const ParamViews& views) override { views_ = views; }
  void set_random_stream(uint64_t key, uint64_t step) override;
  void set_first_sample(int64_t first) override { first_sample_ = first; }
  const DeviceTensor& forward(const DeviceTensor& x, Mode mode) override;
  const DeviceTensor& backward(const DeviceTensor& dy) override;

  // Applies the ReLU that follows the layer, and then the Dropout `dropout` (null: none), as part of this
  // layer; the containers then run neither as a layer of its own.
  void fuse_relu(const LayerSpec* dropout);

 private:
  void gemm_forward(const DeviceTensor& x, int64_t n);
  float dropout_scale() const;  // the fused dropout's 1/(1-p) in the last forward, 1 when it was identity

  LayerSpec spec_;
  Context& ctx_;
  ParamViews views_;
  bool relu_ = false;
  LayerSpec dropout_;       // the fused dropout's spec (kind Dropout) when relu_ and one follows
  bool has_dropout_ = false;
  uint64_t mask_key_ = 0, step_ = 0;
  int64_t first_sample_ = 0;
  bool dropped_ = false;    // the last forward drew the dropout mask (Train and p > 0)
  DeviceTensor x_, y_, dx_, dz_;
  DeviceBuffer y_buffer_, dz_buffer_;
  LtMatmul lt_;        // forward and dgrad, on the compute stream
  LtMatmul lt_wgrad_;  // the weight gradient, on the weight-gradient stream: a workspace of its own
};

}  // namespace sb::cuda
