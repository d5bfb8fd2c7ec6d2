// Losses, each the mean over the batch. labels are class indices in [0, C).
#pragma once
#include <cstdint>

#include "core/tensor.h"

namespace sb::cpu {

// NLL on log-probabilities logp [N, C]: L = -mean_n logp[n, label_n]. Writes dL/dlogp into grad.
template <typename T>
T nll_loss(const Tensor<T>& logp, const int32_t* labels, Tensor<T>& grad);

// Cross-entropy on logits [N, C]: log-softmax then NLL, fused and numerically stable. Writes dL/dlogits.
template <typename T>
T cross_entropy_loss(const Tensor<T>& logits, const int32_t* labels, Tensor<T>& grad);

// Number of rows whose arg-max equals the label (first maximum wins on ties).
template <typename T>
int64_t count_correct(const Tensor<T>& scores, const int32_t* labels);

}  // namespace sb::cpu
