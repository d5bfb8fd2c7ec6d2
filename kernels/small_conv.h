// The first convolution of a network whose input has few channels (MNIST's conv1: 1 -> K channels; the
// CIFAR stems: 3 -> K), 3x3, as our own kernels, with an optional bias and ReLU in the same pass. cuDNN
// gives such a layer a GEMM whose reduction (9 x channels) is too short to fill its tiles, plus separate
// bias, ReLU and reduction passes; here the forward is one pass and the backward (weight and bias gradients
// only: the network's input needs no gradient) is a partial-sum pass and the block-ordered sum of
// kernels/partial_sums.h, so the gradients have the same bits every run.
#pragma once
#include <cuda_runtime_api.h>

#include <cstdint>

#include "core/dtype.h"

namespace sb::kernels {

constexpr int kFirstConvTaps = 9;         // the 3x3 filter the kernels take
constexpr int kFirstConvMaxChannels = 4;  // the most input channels: a thread keeps 9 x channels sums

// x: [n, c, h, w]; y: [n, k, p, q] with p = (h + 2 pad - 3) / stride + 1 (q likewise).
struct FirstConvShape {
  int64_t n = 0, c = 1, h = 0, w = 0, k = 0, p = 0, q = 0;
  int pad = 0, stride = 1;
};

// What the pass does besides the convolution, and the order of the filter in memory.
struct FirstConvOptions {
  bool bias = true;  // add bias[k] (fp32); the gradient buffer then ends with the k bias gradients
  bool relu = true;  // y = max(0, ...); backward then reads y for the ReLU's mask
  // The weights and their gradients are [k, 3, 3, c] (the CUDA engine's order under NHWC, nn/filter_order.h);
  // otherwise [k, c, 3, 3]. The same thing when c == 1.
  bool filters_krsc = false;
};

// Whether the kernels take c input and k output channels (c up to kFirstConvMaxChannels; k a power of two up
// to 256: a block's threads share the channels out).
bool first_conv_supports(int64_t c, int64_t k);

// y = [relu](conv(x, w) [+ bias]), x and y in `layout`. w: the k x c x 9 weights in the compute dtype;
// bias: k fp32 values (ignored without options.bias). The convolution is rounded to the dtype, and with a
// bias the sum is rounded again, as the separate convolution and bias passes do.
void first_conv_forward(const void* x, const void* w, const float* bias, void* y, const FirstConvShape& s,
                        const FirstConvOptions& o, Layout layout, DType dtype, cudaStream_t stream);

// The fp32 values a layer's gradient buffer holds: k x c x 9 weights, then k biases with options.bias.
int64_t first_conv_gradient_count(const FirstConvShape& s, const FirstConvOptions& o);

// How many fp32 values the backward's partial sums need.
int64_t first_conv_backward_workspace(const FirstConvShape& s, const FirstConvOptions& o);

// The weight (and bias) gradients of first_conv_forward for the output gradient dy, into `grads`
// (first_conv_gradient_count values, overwritten). y: the forward's output, read for the ReLU's mask (y > 0)
// with options.relu and ignored without. workspace: first_conv_backward_workspace(s, o) floats.
void first_conv_backward(const void* x, const void* y, const void* dy, float* grads, float* workspace,
                         const FirstConvShape& s, const FirstConvOptions& o, Layout layout, DType dtype,
                         cudaStream_t stream);

}  // namespace sb::kernels
