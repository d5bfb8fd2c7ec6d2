// Lets a long CPU training step be abandoned between layers. A stop signal (a job's time limit) may come
// with only a second's grace before SIGKILL (mpirun's default), less than one large-batch CPU step: the
// engine installs a check for the duration of a step, and the containers call it between layers.
#pragma once

namespace sb::cpu {

// Thrown out of forward/backward when the installed check says stop; the step is then abandoned.
struct StepInterrupted {};

// Installs `check` for this scope (only one at a time; nullptr: none).
class ScopedStepInterrupt {
 public:
  explicit ScopedStepInterrupt(int (*check)());
  ~ScopedStepInterrupt();
  ScopedStepInterrupt(const ScopedStepInterrupt&) = delete;
  ScopedStepInterrupt& operator=(const ScopedStepInterrupt&) = delete;
};

// Throws StepInterrupted when the installed check returns non-zero.
void interrupt_point();

}  // namespace sb::cpu
