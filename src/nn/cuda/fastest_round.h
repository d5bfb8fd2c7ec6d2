// How autotuning times one candidate (a cuDNN plan, a cuBLASLt algorithm): rounds of back-to-back launches on
// one stream, the fastest round counting. A round slowed by something else on the GPU (another lane's timing,
// a clock still rising) must not decide a choice that the plan cache then keeps for every later run.
#pragma once
#include <cuda_runtime.h>

#include <functional>
#include <optional>

namespace sb::cuda {

inline constexpr int kTimingRounds = 3;
// A candidate whose first timed launch is slower than this many times the fastest candidate so far is not
// timed further: rounds could not bring it back within reach.
inline constexpr float kDropSlowerThan = 2.0f;
// The launches of a round, for a long kernel: about this much GPU time (at least one launch).
inline constexpr float kRoundMs = 1.0f;

// Milliseconds per launch of the fastest of `rounds` rounds of `launches_per_round` calls of `launch` on
// `stream` (the caller has warmed the candidate up). `launch` returns false when the candidate failed to
// run: then nullopt, and no further launch.
std::optional<float> fastest_round_ms(cudaStream_t stream, int launches_per_round, const std::function<bool()>& launch,
                                      int rounds = kTimingRounds);

// One candidate among several: a warm-up launch, one launch timed alone, then kTimingRounds rounds of
// about kRoundMs each (at most `max_launches_per_round` launches a round). Where the lone launch took over
// `drop_over_ms` (kDropSlowerThan times the fastest so far; 0: none yet), its time is the answer and no
// rounds follow, so that slow candidates cost two launches. nullopt when the candidate failed to run.
std::optional<float> candidate_ms(cudaStream_t stream, int max_launches_per_round, float drop_over_ms,
                                  const std::function<bool()>& launch);

}  // namespace sb::cuda
