#include "nn/cuda/fastest_round.h"

#include "nn/cuda/cuda_handles.h"

namespace sb::cuda {

std::optional<float> fastest_round_ms(cudaStream_t stream, int launches_per_round, const std::function<bool()>& launch) {
  const CudaEvent start = CudaEvent::create(), stop = CudaEvent::create();
  std::optional<float> best;
  for (int round = 0; round < kTimingRounds; ++round) {
    start.record(stream);
    for (int i = 0; i < launches_per_round; ++i)
      if (!launch()) {
        stop.record(stream);
        stop.synchronize();  // nothing of this round may still run when the caller frees what it reads
        return std::nullopt;
      }
    stop.record(stream);
    stop.synchronize();
    const float ms = CudaEvent::elapsed_ms(start, stop) / static_cast<float>(launches_per_round);
    if (!best || ms < *best) best = ms;
  }
  return best;
}

}  // namespace sb::cuda
