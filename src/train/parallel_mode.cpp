#include "train/parallel_mode.h"

namespace sb {

std::span<const EnumName<Parallel>> enum_names(Parallel) {
  static constexpr EnumName<Parallel> names[] = {{Parallel::Ddp, "ddp"}, {Parallel::Dp, "dp"}};
  return names;
}

}  // namespace sb
