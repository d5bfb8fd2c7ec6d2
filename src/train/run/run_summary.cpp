#include "train/run/run_summary.h"

#include <cmath>

namespace sb {

double RunSummary::images() const {
  double n = 0;
  for (const EpochSummary& e : epochs) n += static_cast<double>(e.global_samples);
  return n;
}

double RunSummary::train_seconds() const {
  double t = 0;
  for (const EpochSummary& e : epochs)
    if (std::isfinite(e.wall_max)) t += e.wall_max;  // NaN: resumed after the epoch's last step, nothing timed
  return t;
}

}  // namespace sb
