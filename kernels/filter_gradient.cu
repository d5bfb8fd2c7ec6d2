// See filter_gradient.h. Each filter's [RS][C] matrix is transposed to [C][RS] through a shared-memory tile
// (coalesced reads and writes, +1 column against bank conflicts), widened to fp32 on the way through.
#include "kernels/filter_gradient.h"

#include <string>

#include "kernels/device_utils.cuh"

namespace sb::kernels {
namespace {
using namespace detail;

constexpr int kTile = 32;
constexpr int kTileRows = 8;
constexpr int64_t kMaxFilters = 65535;  // gridDim.z

// src is [filters][rows][cols] in T, dst [filters][cols][rows] in fp32.
template <typename T>
__global__ void transpose_widen_kernel(const T* __restrict__ src, float* __restrict__ dst, int64_t rows, int64_t cols) {
  __shared__ float tile[kTile][kTile + 1];
  const int64_t filter = blockIdx.z;
  const int64_t row0 = static_cast<int64_t>(blockIdx.y) * kTile, col0 = static_cast<int64_t>(blockIdx.x) * kTile;
  const T* in = src + filter * rows * cols;
  float* out = dst + filter * rows * cols;
  for (int r = threadIdx.y; r < kTile; r += kTileRows) {
    const int64_t row = row0 + r, col = col0 + threadIdx.x;
    if (row < rows && col < cols) tile[r][threadIdx.x] = to_float(in[row * cols + col]);
  }
  __syncthreads();
  for (int c = threadIdx.y; c < kTile; c += kTileRows) {
    const int64_t col = col0 + c, row = row0 + threadIdx.x;
    if (row < rows && col < cols) out[col * rows + row] = tile[threadIdx.x][c];
  }
}

}  // namespace

void krsc_to_kcrs_f32(const void* src, DType src_dtype, float* dst, int64_t k, int64_t c, int64_t r, int64_t s,
                      cudaStream_t stream) {
  const int64_t rows = r * s, cols = c;
  if (k <= 0 || rows <= 0 || cols <= 0) return;
  if (k > kMaxFilters)
    fatal("krsc_to_kcrs_f32: " + std::to_string(k) + " filters exceed the grid's " + std::to_string(kMaxFilters));
  const dim3 grid(static_cast<unsigned>((cols + kTile - 1) / kTile), static_cast<unsigned>((rows + kTile - 1) / kTile),
                  static_cast<unsigned>(k));
  const dim3 block(kTile, kTileRows);
  dispatch_dtype(src_dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    transpose_widen_kernel<T><<<grid, block, 0, stream>>>(static_cast<const T*>(src), dst, rows, cols);
  });
  CHECK_CUDA_LAUNCH();
}

}  // namespace sb::kernels
