#include "cli/run_attributes.h"

namespace sb {

std::vector<NamedValue> run_attributes(const RunSummary& run) {
#define SB_RUN_ATTRIBUTE_VALUE(name, unit, value) NamedValue{#name, static_cast<double>(value)},
  return {SB_RUN_ATTRIBUTES(SB_RUN_ATTRIBUTE_VALUE)};
#undef SB_RUN_ATTRIBUTE_VALUE
}

}  // namespace sb
