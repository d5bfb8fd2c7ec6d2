#include "core/dev_switches.h"

#include <cstdlib>

#include "core/error.h"
#include "core/on_off.h"

namespace sb {
namespace {

struct SwitchRow {
  const char* variable;
  bool DevSwitches::*field;
};

constexpr SwitchRow kSwitches[] = {
    {"SCALEBENCH_DEV_FUSED_BN", &DevSwitches::fused_bn},
    {"SCALEBENCH_DEV_FUSED_RESIDUAL_GRAD", &DevSwitches::fused_residual_grad},
    {"SCALEBENCH_DEV_PARALLEL_WGRAD", &DevSwitches::parallel_wgrad},
    {"SCALEBENCH_DEV_OPTIMIZER_OVERLAP", &DevSwitches::optimizer_overlap},
    {"SCALEBENCH_DEV_SYMMETRIC_MEMORY", &DevSwitches::symmetric_memory},
};

bool read_switch(const char* variable) {
  const char* text = std::getenv(variable);
  if (!text || !*text) return true;
  if (const std::optional<bool> value = on_off_value(text)) return *value;
  throw UserError(std::string(variable) + "='" + text + "': a developer switch is on or off (docs/kernels.md)");
}

}  // namespace

DevSwitches dev_switches() {
  DevSwitches switches;
  for (const SwitchRow& row : kSwitches) switches.*row.field = read_switch(row.variable);
  return switches;
}

std::string describe_changed(const DevSwitches& switches) {
  std::string text;
  for (const SwitchRow& row : kSwitches)
    if (!(switches.*row.field)) text += (text.empty() ? "" : ", ") + std::string(row.variable) + "=off";
  return text;
}

}  // namespace sb
