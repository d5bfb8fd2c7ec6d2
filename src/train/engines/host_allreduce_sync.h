// The CPU engine's gradient sync: the whole gradient buffer averaged by one blocking all-reduce of the
// Communicator (MPI_Allreduce, polled under the collective watchdog) once the last backward is done.
#pragma once
#include "train/engines/gradient_sync.h"

namespace sb {

extern const GradientSyncStrategy kHostAllreduce;

}  // namespace sb
