// A kernel that does what a CUDA graph's memset node does. In a graph, a memset node costs several
// microseconds of idle GPU before and after it (the copy engine's hand-over), where a kernel node follows
// its predecessor within a fraction of a microsecond; cuDNN's convolutions queue a 4-byte memset each.
// src/train/engines/cuda/graph_memsets.h replaces a captured graph's memset nodes with these kernels.
#pragma once
#include <cuda_runtime_api.h>
#include <vector_types.h>

namespace sb::kernels {

// The launch of a kernel that writes p.value (p.elementSize bytes: 1, 2 or 4) to every element of the
// p.height rows of p.width elements, p.pitch bytes apart, at p.dst. `args` receives the kernel's
// argument storage, which must outlive the use of the returned parameters (cudaGraphAddKernelNode copies
// them). Fails (fatal) on an element size other than 1, 2 or 4. A contiguous memset of whole, 16-byte aligned
// words is written with 16-byte stores.
struct MemsetKernelArgs {
  void* dst;
  size_t pitch;
  unsigned int value;
  unsigned int element_size;
  size_t width;
  size_t height;
  uint4 pattern;  // where the memset is whole aligned 16-byte words: the value repeated, and their count
  size_t words;
  void* pointers[6];
};
cudaKernelNodeParams memset_kernel_params(const cudaMemsetParams& p, MemsetKernelArgs& args);

}  // namespace sb::kernels
