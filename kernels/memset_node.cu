#include "kernels/device_utils.cuh"
#include "kernels/memset_node.h"

#include <cstdint>
#include <string>

namespace sb::kernels {
namespace {
using namespace detail;

__global__ void memset_node_kernel(void* dst, size_t pitch, unsigned int value, unsigned int element_size,
                                   size_t width, size_t height) {
  // One kernel for the three element sizes, so that one function pointer serves every node; the branch is
  // uniform across the grid.
  char* bytes = static_cast<char*>(dst);
  const size_t total = width * height;
  for (size_t i = static_cast<size_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < total;
       i += static_cast<size_t>(gridDim.x) * blockDim.x) {
    const size_t row = i / width, column = i % width;
    char* at = bytes + row * pitch + column * element_size;
    if (element_size == 4) *reinterpret_cast<unsigned int*>(at) = value;
    else if (element_size == 2) *reinterpret_cast<unsigned short*>(at) = static_cast<unsigned short>(value);
    else *reinterpret_cast<unsigned char*>(at) = static_cast<unsigned char>(value);
  }
}

// A contiguous memset of whole, aligned 16-byte words (cuDNN's large workspace clears): one 16-byte store per
// word, without the per-element division of the general kernel.
__global__ void memset_words_kernel(uint4* dst, uint4 pattern, size_t words) {
  for (size_t i = static_cast<size_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < words;
       i += static_cast<size_t>(gridDim.x) * blockDim.x)
    dst[i] = pattern;
}

// The element value repeated over 4 bytes.
unsigned int repeated_word(unsigned int value, unsigned int element_size) {
  if (element_size == 4) return value;
  if (element_size == 2) return (value & 0xFFFFu) * 0x00010001u;
  return (value & 0xFFu) * 0x01010101u;
}

}  // namespace

cudaKernelNodeParams memset_kernel_params(const cudaMemsetParams& p, MemsetKernelArgs& args) {
  if (p.elementSize != 1 && p.elementSize != 2 && p.elementSize != 4)
    fatal("memset_kernel_params: element size " + std::to_string(p.elementSize) + " (CUDA allows 1, 2 or 4)");
  const size_t height = p.height == 0 ? 1 : p.height;
  cudaKernelNodeParams k{};
  k.blockDim = dim3(kThreads);
  k.kernelParams = args.pointers;
  args.dst = p.dst;
  args.pointers[0] = &args.dst;
  const size_t bytes = p.width * p.elementSize;
  if (height == 1 && reinterpret_cast<uintptr_t>(p.dst) % 16 == 0 && bytes % 16 == 0) {
    const unsigned int word = repeated_word(p.value, p.elementSize);
    args.pattern = make_uint4(word, word, word, word);
    args.words = bytes / 16;
    args.pointers[1] = &args.pattern;
    args.pointers[2] = &args.words;
    k.func = reinterpret_cast<void*>(memset_words_kernel);
    k.gridDim = dim3(grid_for(static_cast<int64_t>(args.words)));
    return k;
  }
  args.pitch = height == 1 ? bytes : p.pitch;
  args.value = p.value;
  args.element_size = p.elementSize;
  args.width = p.width;
  args.height = height;
  args.pointers[1] = &args.pitch;
  args.pointers[2] = &args.value;
  args.pointers[3] = &args.element_size;
  args.pointers[4] = &args.width;
  args.pointers[5] = &args.height;
  k.func = reinterpret_cast<void*>(memset_node_kernel);
  k.gridDim = dim3(grid_for(static_cast<int64_t>(p.width * height)));
  return k;
}

}  // namespace sb::kernels
