#include "train/study/study_problems.h"

#include <algorithm>
#include <cstdio>

namespace sb {
namespace {

// Epochs shorter than this are too short to time steadily: start-up and the timer's own cost weigh in.
constexpr double kShortEpochS = 1.0;

std::string percent(double fraction) {
  char text[32];
  std::snprintf(text, sizeof text, "%.1f%%", 100.0 * fraction);
  return text;
}

const StudyMedian& baseline_of(const StudyMedian& row, const std::vector<StudyMedian>& rows) {
  const auto base = std::find_if(rows.begin(), rows.end(), [&](const StudyMedian& r) {
    return r.baseline && r.combination == row.combination;
  });
  return base == rows.end() ? row : *base;
}

}  // namespace

std::vector<StudyProblem> study_problems(const std::vector<StudyMedian>& rows, const std::string& unit) {
  std::vector<StudyProblem> problems;
  for (const StudyMedian& base : rows) {
    const bool compared = std::any_of(rows.begin(), rows.end(), [&](const StudyMedian& r) {
      return !r.baseline && r.combination == base.combination;
    });
    if (base.baseline && compared && base.steady_epochs == 1) {
      problems.push_back({base.combination, 0,
                          "the " + std::to_string(base.gpus) + "-" + unit + " baseline has one steady epoch, so no "
                          "speedup or efficiency against it is a result; give --epochs 3 or more"});
    }
  }
  for (const StudyMedian& row : rows) {
    if (row.baseline || row.min_efficiency <= 1.0 || has_problem(row, problems)) continue;
    const StudyMedian& base = baseline_of(row, rows);
    char epoch[64];
    std::snprintf(epoch, sizeof epoch, "%.3f", base.epoch_time_s);
    const std::string cause =
        base.epoch_time_s < kShortEpochS
            ? "the runs are too short for the timer (the baseline's epochs take " + std::string(epoch) +
                  " s); give more data or epochs"
            : "the baseline ran below its steady speed; give more --settle-epochs or --repeats";
    problems.push_back({row.combination, row.gpus,
                        "the efficiency at " + std::to_string(row.gpus) + " " + unit + "s, " + percent(row.efficiency) +
                            " (range " + percent(row.min_efficiency) + "-" + percent(row.max_efficiency) +
                            "), lies above 100% beyond its measured range: a measurement problem, not a result; " +
                            cause});
  }
  return problems;
}

bool has_problem(const StudyMedian& row, const std::vector<StudyProblem>& problems) {
  return !row.baseline && std::any_of(problems.begin(), problems.end(), [&](const StudyProblem& p) {
    return p.combination == row.combination && (p.gpus == 0 || p.gpus == row.gpus);
  });
}

}  // namespace sb
