// The line that says how an epoch's GPU clocks (train/run/epoch_clocks.h) held up.
#pragma once
#include <string>

#include "train/run/epoch_clocks.h"

namespace sb {

// "GPU clocks in the last epoch: SM 1,635-1,680 MHz across GPUs at 58-65 C; the power limit held the
// clocks down for 100% of it, temperature for 0% (the most limited GPU)", with the parts that were
// measured; empty when none was.
std::string clocks_line(const EpochClocks& c);

}  // namespace sb
