// Pseudo-random fill (see random_fill.h): each element hashes its index with the seed (SplitMix64's
// finaliser), so the values need no state and one launch covers any size.
#include "kernels/random_fill.h"

#include "kernels/device_utils.cuh"

namespace sb::kernels {
namespace {
using namespace detail;

__device__ __forceinline__ uint64_t mix64(uint64_t z) {
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

template <typename T>
__global__ void fill_uniform_kernel(T* data, int64_t n, uint64_t seed, float lo, float width) {
  for (int64_t i = global_thread(); i < n; i += grid_threads()) {
    const uint64_t bits = mix64(seed + 0x9e3779b97f4a7c15ull * static_cast<uint64_t>(i + 1));
    const float unit = static_cast<float>(bits >> 40) * (1.0f / 16777216.0f);  // 24 bits: [0, 1)
    data[i] = from_float<T>(lo + width * unit);
  }
}

}  // namespace

void fill_uniform(void* data, DType dtype, int64_t n, uint64_t seed, float lo, float hi, cudaStream_t stream) {
  if (n <= 0) return;
  dispatch_dtype(dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    fill_uniform_kernel<T><<<grid_for(n), kThreads, 0, stream>>>(static_cast<T*>(data), n, seed, lo, hi - lo);
  });
  CHECK_CUDA_LAUNCH();
}

}  // namespace sb::kernels
