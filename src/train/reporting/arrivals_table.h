// The results file's `arrivals` and `straggler` tables (docs/results_schema.md): one block per epoch of
// each rank's arrival at the gradient collective and the straggler verdict over them.
#pragma once
#include "metrics/results_file.h"
#include "train/run/run_summary.h"

namespace sb {

// Nothing where the epoch's arrivals were not measured (an engine that does not time them, no sampled step).
void write_arrivals(RunWriter& writer, const EpochSummary& s);

}  // namespace sb
