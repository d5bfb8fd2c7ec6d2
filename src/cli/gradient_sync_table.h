// The gradient-sync strategies, one row each (GradientSyncStrategy, train/engines/gradient_sync.h; the rows
// live beside their implementations). An engine runs the first row of its device; a new strategy is one
// file and one row here (docs/architecture.md, "Adding a gradient-sync strategy").
#pragma once
#include <span>

#include "train/engines/gradient_sync.h"
#include "train/run_choices.h"

namespace sb {

// Every row, in the order they are listed.
std::span<const GradientSyncStrategy* const> gradient_sync_strategies();
// The strategy an engine on `device` runs: its first row.
const GradientSyncStrategy& gradient_sync_for(Device device);

}  // namespace sb
