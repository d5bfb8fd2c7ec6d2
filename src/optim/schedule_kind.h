// The learning-rate schedules the --scheduler option names, as an enum parsed once on the command line.
#pragma once
#include <span>

#include "core/enum_names.h"

namespace sb {

enum class ScheduleKind { None, Step, Cosine };

// The one table of the schedules' option names: "none", "step", "cosine" (core/enum_names.h).
std::span<const EnumName<ScheduleKind>> enum_names(ScheduleKind);

}  // namespace sb
