// What the CUDA benchmarks share: skipping without a GPU, and the GPU time of a piece of work from CUDA
// events on one stream (their manual time).
#pragma once
#include <benchmark/benchmark.h>
#include <cuda_runtime_api.h>

#include "core/cuda_check.h"

namespace sb::bench {

// False, with the benchmark skipped as "no CUDA device", where there is no GPU.
inline bool have_gpu(benchmark::State& state) {
  int count = 0;
  if (cudaGetDeviceCount(&count) != cudaSuccess || count == 0) {
    state.SkipWithError("no CUDA device");
    return false;
  }
  return true;
}

// GPU time of `body` from CUDA events on the context's stream.
class EventTimer {
 public:
  explicit EventTimer(cudaStream_t stream) : stream_(stream) {
    CHECK_CUDA(cudaEventCreate(&start_));
    CHECK_CUDA(cudaEventCreate(&stop_));
  }
  ~EventTimer() {
    cudaEventDestroy(start_);
    cudaEventDestroy(stop_);
  }
  template <typename Body>
  double seconds(Body&& body) {
    CHECK_CUDA(cudaEventRecord(start_, stream_));
    body();
    CHECK_CUDA(cudaEventRecord(stop_, stream_));
    CHECK_CUDA(cudaEventSynchronize(stop_));
    float ms = 0.0f;
    CHECK_CUDA(cudaEventElapsedTime(&ms, start_, stop_));
    return ms * 1e-3;
  }

 private:
  cudaStream_t stream_;
  cudaEvent_t start_ = nullptr, stop_ = nullptr;
};

}  // namespace sb::bench
