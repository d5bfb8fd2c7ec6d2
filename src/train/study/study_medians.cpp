#include "train/study/study_medians.h"

#include <algorithm>
#include <cmath>

#include "core/median.h"

namespace sb {

std::vector<StudyMedian> study_medians(const std::vector<StudyPoint>& points) {
  std::vector<StudyMedian> rows;
  for (const StudyPoint& p : points) {
    const bool seen = std::any_of(rows.begin(), rows.end(), [&](const StudyMedian& r) {
      return r.combination == p.plan.combination && r.gpus == p.gpus;
    });
    if (seen) continue;
    std::vector<double> rates, times, comm, clocks;
    int repeats = 0;
    for (const StudyPoint& q : points) {
      if (q.plan.combination != p.plan.combination || q.gpus != p.gpus) continue;
      ++repeats;
      if (q.steady_images_per_s.empty()) {
        rates.push_back(q.images_per_s);
        times.push_back(q.epoch_time_s);
      } else {
        rates.insert(rates.end(), q.steady_images_per_s.begin(), q.steady_images_per_s.end());
        times.insert(times.end(), q.steady_epoch_times_s.begin(), q.steady_epoch_times_s.end());
      }
      comm.push_back(q.exposed_comm_fraction);
      if (std::isfinite(q.sm_clock_min_mhz)) clocks.push_back(q.sm_clock_min_mhz);
    }
    StudyMedian row;
    row.combination = p.plan.combination;
    row.gpus = p.gpus;
    row.repeats = repeats;
    row.steady_epochs = static_cast<int>(rates.size());
    row.images_per_s = median_of(rates);
    row.min_images_per_s = *std::min_element(rates.begin(), rates.end());
    row.max_images_per_s = *std::max_element(rates.begin(), rates.end());
    row.epoch_time_s = median_of(times);
    row.exposed_comm_fraction = median_of(comm);
    row.sm_clock_min_mhz = median_of(clocks);  // NaN when no repeat measured it
    rows.push_back(row);
  }
  for (StudyMedian& row : rows) {
    const StudyMedian* base = &row;
    for (const StudyMedian& other : rows)
      if (other.combination == row.combination && other.gpus < base->gpus) base = &other;
    const ScalingRatio r = scaling_ratio(row, *base);
    row.speedup = r.speedup;
    row.efficiency = r.efficiency;
    const double per_image = r.efficiency / row.images_per_s;  // efficiency of one image/s of this row
    row.min_efficiency = row.min_images_per_s * per_image;
    row.max_efficiency = row.max_images_per_s * per_image;
    row.baseline = base == &row;
  }
  return rows;
}

double epoch_spread(const StudyMedian& row) {
  return row.images_per_s > 0 ? (row.max_images_per_s - row.min_images_per_s) / row.images_per_s : 0.0;
}

}  // namespace sb
