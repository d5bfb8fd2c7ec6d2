// The phases of a training step: the one list, in the order of PhaseTimes::seconds (train/engine.h), of
// the last axis of a results file's /steps and of its `phases` attribute.
#pragma once
#include <array>

namespace sb {

enum Phase { kPhaseData = 0, kPhaseForward, kPhaseBackward, kPhaseComm, kPhaseOptimizer, kPhaseCount };

inline constexpr std::array<const char*, kPhaseCount> kStepPhases = {"data", "forward", "backward", "comm", "optimizer"};

inline const char* phase_name(int phase) { return kStepPhases[static_cast<size_t>(phase)]; }

}  // namespace sb
