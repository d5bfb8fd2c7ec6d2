#include "optim/schedule_kind.h"

namespace sb {

std::span<const EnumName<ScheduleKind>> enum_names(ScheduleKind) {
  static constexpr EnumName<ScheduleKind> names[] = {
      {ScheduleKind::None, "none"}, {ScheduleKind::Step, "step"}, {ScheduleKind::Cosine, "cosine"}};
  return names;
}

}  // namespace sb
