// Pooling over a logical [n, c, h, w] tensor stored NCHW or NHWC, in fp32/fp16/bf16 (fp32 arithmetic),
// with PyTorch's semantics as in the CPU reference (src/nn/cpu/pooling.h): floor mode, and for max
// pooling `pad` cells of -inf on each side (they never win), so the output is
// [n, c, (h + 2 pad - kernel)/stride + 1, (w + 2 pad - kernel)/stride + 1] in the same layout. Average
// pooling takes no padding.
// Backward passes gather (each input element sums the windows that cover it) rather than scatter, so
// they write every element of dx (uncovered ones as 0), need no memset or atomics, and are
// deterministic. cuDNN's pooling is legacy-only in cuDNN 9 (deprecated); these are ours instead.
#pragma once
#include <cuda_runtime_api.h>

#include <cstdint>

#include "core/dtype.h"

namespace sb::kernels {

struct PoolShape {
  int64_t n, c, h, w;  // the input, logical NCHW
  int kernel, stride;  // square windows
  int pad = 0;         // max pooling only; at most kernel / 2
};

// The bytes of the maxima's positions that max pooling can keep from forward for backward: one byte per
// output element (its maximum's place in the window, ky * kernel + kx) for NHWC windows that overlap or are
// padded, such as the ResNet stem's 3x3/2 with padding 1; 0 for the rest, where backward searches each window
// again at little cost (windows that tile the input) or where none is kept (NCHW).
int64_t maxpool_positions_bytes(const PoolShape& shape, Layout layout, DType dtype);
// Whether windows of this size, stride and padding keep their positions whatever the input's size and
// element type (then backward never reads x): NHWC windows that cannot tile the input.
bool maxpool_keeps_positions_at_any_size(int kernel, int stride, int pad, Layout layout);

// y = max over each window; the first maximum in row-major window order wins on ties (a NaN wins).
// `positions`, where given, receives maxpool_positions_bytes of positions for backward (training);
// it must be null where that is 0.
void maxpool_forward(const void* x, void* y, const PoolShape& shape, Layout layout, DType dtype,
                     cudaStream_t stream, uint8_t* positions = nullptr);
// dx: each window's dy goes to its maximum: read from `positions` (filled by the forward of this x), else
// found again from x.
void maxpool_backward(const void* x, const void* dy, void* dx, const PoolShape& shape, Layout layout,
                      DType dtype, cudaStream_t stream, const uint8_t* positions = nullptr);

// y = mean over each window (kernel * kernel elements).
void avgpool_forward(const void* x, void* y, const PoolShape& shape, Layout layout, DType dtype,
                     cudaStream_t stream);
void avgpool_backward(const void* dy, void* dx, const PoolShape& shape, Layout layout, DType dtype,
                      cudaStream_t stream);

// [n, c, h, w] -> [n, c] (= [n, c, 1, 1], the same bytes in either layout): the mean over h x w.
void global_avgpool_forward(const void* x, void* y, int64_t n, int64_t c, int64_t h, int64_t w, Layout layout,
                            DType dtype, cudaStream_t stream);
// dx[n, c, h, w] = dy[n, c] / (h * w).
void global_avgpool_backward(const void* dy, void* dx, int64_t n, int64_t c, int64_t h, int64_t w,
                             Layout layout, DType dtype, cudaStream_t stream);

}  // namespace sb::kernels
