// Loss kernels over [N, C] score matrices (row n = sample n, C classes, contiguous rows; the layout of an
// [N, C] tensor is the same in NCHW and NHWC). Losses are the mean over the batch, as in the CPU
// reference (src/nn/cpu/loss.h). Labels are int32 class indices in [0, C) on the device; a label out of
// range makes the loss NaN (the host can't be told without a sync).
//
// Every loss function can, without a host synchronisation:
//  - write this batch's mean loss to loss_out (a device float; nullptr: skip),
//  - add the batch's loss sum and its number of correct arg-max predictions (first maximum wins on
//    ties) to a LossCounters in device memory (nullptr: skip), which the host reads once per epoch,
//  - write the gradient in the scores' dtype, multiplied by grad_scale and, when loss_scale is not
//    nullptr, by *loss_scale (the device-resident dynamic loss scale of fp16 training). A null gradient
//    pointer skips the backward (evaluation).
// Each launch is a single thread block over the batch (batches are small next to the kernels around
// them), so the sums are deterministic.
//
// mnist-cnn ends in LogSoftmax + NLL. The CUDA engine runs it as softmax_cross_entropy on the LogSoftmax's
// input (the network leaves the layer to the loss: nn/fusion_plan.h): nll(log_softmax(x)) is
// cross-entropy, and its gradient (softmax(x) - onehot) / N is the same maths, in one launch instead of
// three. The separate log_softmax_* and nll_loss serve networks built for their output (which keep the
// LogSoftmax layer), DataParallel's replicas and the tests.
#pragma once
#include <cuda_runtime_api.h>

#include <cstdint>

#include "core/dtype.h"

namespace sb::kernels {

// Accumulators in device memory; zero them (cudaMemsetAsync) at the start of an epoch.
struct LossCounters {
  double loss_sum;              // sum over samples of the per-sample loss
  unsigned long long correct;   // samples whose arg-max equals the label
  unsigned long long samples;   // samples seen
};

// Fused log-softmax + NLL over logits [n, c]: loss = mean_n (logsumexp(x_n) - x_n[label_n]), and
// dlogits = (softmax(x) - onehot(label)) / n * grad_scale * (*loss_scale). dlogits must not alias logits.
void softmax_cross_entropy(const void* logits, const int32_t* labels, void* dlogits, int64_t n, int64_t c,
                           DType dtype, float grad_scale, const float* loss_scale, float* loss_out,
                           LossCounters* counters, cudaStream_t stream);

// y = log_softmax(x) over dim 1 of [n, c]. y may alias x.
void log_softmax_forward(const void* x, void* y, int64_t n, int64_t c, DType dtype, cudaStream_t stream);

// dx = dy - exp(y) * sum_j dy_j per row, from the forward's output y. dx may alias dy.
void log_softmax_backward(const void* y, const void* dy, void* dx, int64_t n, int64_t c, DType dtype,
                          cudaStream_t stream);

// NLL on log-probabilities logp [n, c]: loss = -mean_n logp[n, label_n];
// dlogp = -onehot(label) / n * grad_scale * (*loss_scale) (every other element written as 0). dlogp must not
// alias logp.
void nll_loss(const void* logp, const int32_t* labels, void* dlogp, int64_t n, int64_t c, DType dtype,
              float grad_scale, const float* loss_scale, float* loss_out, LossCounters* counters,
              cudaStream_t stream);

}  // namespace sb::kernels
