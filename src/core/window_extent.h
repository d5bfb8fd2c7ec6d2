// The output extent of a sliding window (convolution or pooling, floor mode, no dilation) over an input
// extent padded by `pad` cells on each side. The one formula of the layers' shapes (src/nn/spec.cpp), the CPU
// pooling and the CUDA pooling and fused batch-norm kernels. Plain C++17: CUDA sources include it too.
#pragma once

#include "core/host_device.h"

namespace sb {

template <typename I>
SB_HOST_DEVICE I window_extent(I size, I kernel, I stride, I pad) {
  return (size + 2 * pad - kernel) / stride + 1;
}

}  // namespace sb
