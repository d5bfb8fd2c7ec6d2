// How a run spreads over its devices (--parallel): ddp, one process per GPU with gradients all-reduced
// (DistributedDataParallel), or dp, one process driving --replicas devices (nn.DataParallel,
// src/train/engines/dp/).
#pragma once
#include <span>

#include "core/enum_names.h"

namespace sb {
enum class Parallel { Ddp, Dp };
std::span<const EnumName<Parallel>> enum_names(Parallel);  // ddp, dp
}  // namespace sb
