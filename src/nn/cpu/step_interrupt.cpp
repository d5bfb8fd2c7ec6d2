#include "nn/cpu/step_interrupt.h"

namespace sb::cpu {
namespace {
int (*g_check)() = nullptr;
}  // namespace

ScopedStepInterrupt::ScopedStepInterrupt(int (*check)()) { g_check = check; }
ScopedStepInterrupt::~ScopedStepInterrupt() { g_check = nullptr; }

void interrupt_point() {
  if (g_check != nullptr && g_check() != 0) throw StepInterrupted{};
}

}  // namespace sb::cpu
