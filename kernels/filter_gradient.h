// The filter gradient of a convolution under NHWC into the fp32 flat gradient: cuDNN writes dw as KRSC in
// the compute dtype (many times faster than fp32 dw, docs/cudnn.md), and the flat buffer holds PyTorch's
// KCRS order in fp32. One pass transposes and widens, instead of a transpose then a cast.
#pragma once
#include <cuda_runtime_api.h>

#include <cstdint>

#include "core/dtype.h"

namespace sb::kernels {

// dst[k][c][r][s] (fp32) = src[k][r][s][c] (src_dtype, any of fp32/fp16/bf16), written, not accumulated.
// Only enqueues work on `stream`. dst must not alias src.
void krsc_to_kcrs_f32(const void* src, DType src_dtype, float* dst, int64_t k, int64_t c, int64_t r, int64_t s,
                      cudaStream_t stream);

}  // namespace sb::kernels
