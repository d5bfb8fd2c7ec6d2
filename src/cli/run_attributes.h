// The run-level figures of a `train` results file: root attributes written when the run ends.
#pragma once
#include <vector>

#include "metrics/results_file.h"
#include "train/run/run_summary.h"

namespace sb {

// One row each: X(attribute name, unit, value), the value an expression of the run's RunSummary `run`.
// A new run-level figure is one row here and one in docs/results_schema.md, which says what each means.
#define SB_RUN_ATTRIBUTES(X)                              \
  X(total_time_s, "s", run.elapsed_seconds())             \
  X(total_images, "images", run.images())                 \
  X(overall_images_per_s, "images/s", run.images_per_s()) \
  X(best_test_accuracy, "1", run.best_accuracy)           \
  X(time_to_target_s, "s", run.time_to_target)            \
  X(wall_to_target_s, "s", run.wall_to_target)

// The run's figures, in the rows' order.
std::vector<NamedValue> run_attributes(const RunSummary& run);

}  // namespace sb
