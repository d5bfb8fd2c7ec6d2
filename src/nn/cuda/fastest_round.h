// How autotuning times one candidate (a cuDNN plan, a cuBLASLt algorithm): rounds of back-to-back launches on
// one stream, the fastest round counting. A round slowed by something else on the GPU (another lane's timing,
// a clock still rising) must not decide a choice that the plan cache then keeps for every later run.
#pragma once
#include <cuda_runtime.h>

#include <functional>
#include <optional>

namespace sb::cuda {

inline constexpr int kTimingRounds = 3;

// Milliseconds per launch of the fastest of kTimingRounds rounds of `launches_per_round` calls of `launch`
// on `stream` (the caller has warmed the candidate up). `launch` returns false when the candidate failed to
// run: then nullopt, and no further launch.
std::optional<float> fastest_round_ms(cudaStream_t stream, int launches_per_round, const std::function<bool()>& launch);

}  // namespace sb::cuda
