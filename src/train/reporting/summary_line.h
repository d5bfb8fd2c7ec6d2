// The line that closes a training run's output.
#pragma once
#include <string>

#include "train/run/run_summary.h"

namespace sb {

// The run's closing line: "summary: 12.3 s in total, 120,000 images at 10,250 img/s, best test accuracy 91.20%,
// 90.00% reached after 8.4 s (10.2 s from process start)"; the last part only when the run has a target.
std::string summary_line(const RunSummary& run, double target_accuracy);

// The straggler line (train/run/straggler.h) of the run's last epoch whose arrivals were measured, or the
// line that says they were not; root only (the other ranks hold no arrivals).
std::string run_straggler_line(const RunSummary& run);

}  // namespace sb
