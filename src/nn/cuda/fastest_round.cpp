#include "nn/cuda/fastest_round.h"

#include <algorithm>
#include <cmath>

#include "nn/cuda/cuda_handles.h"

namespace sb::cuda {

std::optional<float> fastest_round_ms(cudaStream_t stream, int launches_per_round, const std::function<bool()>& launch,
                                      int rounds) {
  const CudaEvent start = CudaEvent::create(), stop = CudaEvent::create();
  std::optional<float> best;
  for (int round = 0; round < rounds; ++round) {
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

std::optional<float> candidate_ms(cudaStream_t stream, int max_launches_per_round, float drop_over_ms,
                                  const std::function<bool()>& launch) {
  if (!launch()) return std::nullopt;  // the warm-up, and a check that it runs
  const std::optional<float> lone = fastest_round_ms(stream, 1, launch, /*rounds=*/1);
  if (!lone) return std::nullopt;
  if (drop_over_ms > 0.0f && *lone > drop_over_ms) return lone;
  const int fit = *lone > 0.0f ? static_cast<int>(std::ceil(kRoundMs / *lone)) : max_launches_per_round;
  const std::optional<float> rounds = fastest_round_ms(stream, std::clamp(fit, 1, std::max(1, max_launches_per_round)), launch);
  if (!rounds) return std::nullopt;
  return std::min(*lone, *rounds);
}

}  // namespace sb::cuda
