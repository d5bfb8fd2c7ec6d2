// The three convolution graphs (fprop, dgrad, wgrad) through cuDNN's graph API and the context's plan
// cache. Activations are in the context's compute dtype and layout; the filter is [K, C, R, S] stored
// KCRS under NCHW and KRSC under NHWC (the layout cuDNN's tensor-core engines want).
#pragma once
#include <cstdint>

#include "core/dtype.h"
#include "nn/cuda/context.h"

namespace sb::cuda {

struct ConvGeometry {
  int64_t n, c, h, w;   // input
  int64_t k, r, s;      // filter: out channels, kernel height and width
  int64_t p, q;         // output height and width
  int64_t pad, stride;
};

// y = conv(x, w), plus bias[k] (fp32) when `bias` is not null, fused into the same graph. Returns false
// when no engine runs the fused graph (the caller then adds the bias itself); the plain graph must run.
bool conv_forward(Context& ctx, const ConvGeometry& g, const void* x, const void* w, void* y, const float* bias);

// A batch norm folded into the convolutions around it (docs/cudnn.md, "Batch norm in the convolutions"):
// the convolution that reads the normalised tensor applies x * a[c] + b[c], and the ReLU, as it loads x (a
// prologue), so the normalised tensor is never written; the convolution that produces a batch norm's input
// writes the per-channel sum and sum of squares of its output in its epilogue, so no pass reads it for them.
struct ConvPrologue {
  const void* a = nullptr;  // [c], of dtype
  const void* b = nullptr;  // [c], of dtype
  DType dtype = DType::F32;
  bool relu = true;
};
struct ConvStatistics {
  float* sum = nullptr;    // [k], written
  float* sqsum = nullptr;  // [k], written
};
// y = conv(prologue(x), w), with the statistics of y when `statistics` is not null (either part optional,
// not both absent). False when no engine runs the graph: the caller then runs the separate passes.
bool conv_forward_fused(Context& ctx, const ConvGeometry& g, const void* x, const ConvPrologue* prologue,
                        const void* w, void* y, const ConvStatistics* statistics);

// The backward of a [BatchNorm2d, ReLU] run folded into the dgrad of the convolution that reads its output
// (cuDNN's dgrad-dReLU-dBN-weight pattern): the dgrad's epilogue recomputes the batch norm's output from its
// input, masks the gradient by the ReLU, writes that gradient and reduces it into the batch norm's weight
// gradients and its input gradient's coefficients, so no pass reads the gradient again for the sums.
struct DgradBatchNorm {
  const void* bn_input = nullptr;    // the batch norm's input x [n, c, h, w] (the dgrad's output shape)
  const float* mean = nullptr;       // [c], the forward's batch mean (the weight gradients' node)
  const float* neg_mean = nullptr;   // -mean [c] (the recomputed output's ADD)
  const float* inv_std = nullptr;    // [c]
  const float* scale = nullptr;      // gamma [c]
  const float* bias = nullptr;       // beta [c]
  void* relu_gradient = nullptr;     // written: the gradient at the batch norm's output, masked by the ReLU
  float* dscale = nullptr;           // [c], written
  float* dbias = nullptr;            // [c], written
  float* eq_dy_scale = nullptr;      // [c], written: dx = eq_dy_scale * relu_gradient + eq_x_scale * x + eq_bias
  float* eq_x_scale = nullptr;
  float* eq_bias = nullptr;
};
// False when no engine runs the graph (the caller then runs the dgrad and the batch norm's own passes).
bool conv_backward_data_bn_relu(Context& ctx, const ConvGeometry& g, const void* dy, const void* w, const DgradBatchNorm& bn);

// dx = the gradient of conv with respect to its input.
void conv_backward_data(Context& ctx, const ConvGeometry& g, const void* dy, const void* w, void* dx);

// dx += the gradient of conv with respect to its input: the dgrad graph with beta 1, whose epilogue reads
// the prior dx (a Residual's shortcut gradient) instead of a separate add pass. Returns false, dx untouched,
// when no engine runs that graph (the caller then adds itself).
bool conv_backward_data_accumulate(Context& ctx, const ConvGeometry& g, const void* dy, const void* w, void* dx);

// dw = the gradient with respect to the filter, written (not accumulated) in dw_dtype, in the filter's
// layout. With bf16/fp16 activations, dw in the same dtype is many times faster than fp32 dw (docs/cudnn.md).
// Runs on `stream`: the compute stream or the one Context::begin_weight_gradient() returned.
void conv_backward_filter(Context& ctx, const ConvGeometry& g, const void* x, const void* dy, void* dw, DType dw_dtype,
                          cudaStream_t stream);

// The same of a convolution whose forward read prologue(x) (conv_forward_fused): the weight gradient applies
// the prologue to x as it loads it. False, dw untouched, when no engine runs the graph.
bool conv_backward_filter_fused(Context& ctx, const ConvGeometry& g, const void* x, const ConvPrologue& prologue,
                                const void* dy, void* dw, DType dw_dtype, cudaStream_t stream);

}  // namespace sb::cuda
