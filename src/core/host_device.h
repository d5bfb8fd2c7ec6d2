// SB_HOST_DEVICE marks the small functions that host code and the CUDA kernels share (the Philox draws,
// the augmentation and the optimizer update maths), so that both backends compute literally the same
// thing. Plain C++17: CUDA sources include it too.
#pragma once

#if defined(__CUDACC__)
#define SB_HOST_DEVICE __host__ __device__ __forceinline__
#else
#define SB_HOST_DEVICE inline
#endif
