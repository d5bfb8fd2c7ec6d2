// The first convolution of a network whose input has one channel (MNIST's conv1: 1 -> K channels, 3x3),
// with its bias and ReLU, as our own kernels. cuDNN gives such a layer a tiny GEMM that fills a fraction
// of the GPU plus separate bias, ReLU and reduction passes; here the forward is one pass and the backward
// (weight and bias gradients only: the network's input needs no gradient) is a partial-sum pass and the
// block-ordered sum of kernels/partial_sums.h, so the gradients have the same bits every run.
#pragma once
#include <cuda_runtime_api.h>

#include <cstdint>

#include "core/dtype.h"

namespace sb::kernels {

constexpr int kFirstConvTaps = 9;  // the 3x3 filter the kernels take

// x: [n, 1, h, w]; y: [n, k, p, q] with p = (h + 2 pad - 3) / stride + 1 (q likewise).
struct FirstConvShape {
  int64_t n = 0, h = 0, w = 0, k = 0, p = 0, q = 0;
  int pad = 0, stride = 1;
};

// Whether the kernels take k output channels (a power of two up to 256: a block's threads share them out).
bool first_conv_supports(int64_t k);

// y = relu(conv(x, w) + bias), in `layout` (x, with one channel, is the same in both). w: the [k, 1, 3, 3]
// weights in the compute dtype; bias: k fp32 values. The convolution is rounded to the dtype before the bias
// is added and again after, as the separate convolution and bias passes do.
void first_conv_relu_forward(const void* x, const void* w, const float* bias, void* y, const FirstConvShape& s,
                             Layout layout, DType dtype, cudaStream_t stream);

// How many fp32 values the backward's partial sums need.
int64_t first_conv_backward_workspace(const FirstConvShape& s);

// dw and dbias of y = relu(conv(x, w) + bias) for the output gradient dy, from y (the ReLU's mask is y > 0).
// grads: the fp32 weight gradient [k * 9] followed by the bias gradient [k] (the flat buffer's order),
// overwritten. workspace: first_conv_backward_workspace(s) floats.
void first_conv_relu_backward(const void* x, const void* y, const void* dy, float* grads, float* workspace,
                              const FirstConvShape& s, Layout layout, DType dtype, cudaStream_t stream);

}  // namespace sb::kernels
