#include "train/reporting/summary_line.h"

#include <cmath>
#include <cstdio>

#include "train/reporting/progress_line.h"

namespace sb {

std::string summary_line(const RunSummary& run, double target_accuracy) {
  char text[256];
  std::snprintf(text, sizeof text, "summary: %.3f s in total, %s images at %s img/s, best test accuracy %.2f%%",
                run.elapsed_seconds(), with_thousands(run.images()).c_str(), with_thousands(run.images_per_s()).c_str(),
                100.0 * run.best_accuracy);
  std::string line = text;
  if (target_accuracy > 0) {
    if (std::isfinite(run.time_to_target)) {
      std::snprintf(text, sizeof text, ", %.2f%% reached after %.3f s", 100.0 * target_accuracy, run.time_to_target);
      line += text;
      if (std::isfinite(run.wall_to_target)) {
        std::snprintf(text, sizeof text, " (%.3f s from process start)", run.wall_to_target);
        line += text;
      }
    } else {
      std::snprintf(text, sizeof text, ", %.2f%% not reached", 100.0 * target_accuracy);
      line += text;
    }
  }
  return line;
}

std::string run_straggler_line(const RunSummary& run) {
  for (auto e = run.epochs.rbegin(); e != run.epochs.rend(); ++e)
    if (e->arrivals.measured()) return straggler_line(e->arrivals, e->epoch);
  return straggler_line(EpochArrivals{}, 0);
}

}  // namespace sb
