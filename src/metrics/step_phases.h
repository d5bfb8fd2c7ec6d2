// The phases of a training step: the one list, in the order of PhaseTimes::seconds (train/engines/engine.h), of
// the last axis of a results file's /steps and of its `phases` attribute. They add up to the step on each
// rank: "backward_overlap" is the backward time during which a gradient all-reduce was running beside it,
// "backward" the rest, and "comm" the time the compute stream then waited for the all-reduce (exposed
// communication).
#pragma once
#include <array>

namespace sb {

enum Phase { kPhaseData = 0, kPhaseForward, kPhaseBackward, kPhaseBackwardOverlap, kPhaseComm, kPhaseOptimizer, kPhaseCount };

inline constexpr std::array<const char*, kPhaseCount> kStepPhases = {"data", "forward", "backward", "backward_overlap", "comm",
                                                                     "optimizer"};

inline const char* phase_name(int phase) { return kStepPhases[static_cast<size_t>(phase)]; }

}  // namespace sb
