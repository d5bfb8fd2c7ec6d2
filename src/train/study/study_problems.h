// What a study's figures cannot say: efficiencies that rest on a baseline of one steady epoch, or that lie
// above 100% beyond their measured range. Such a figure is a measurement problem, reported with its likely
// cause rather than as a result (analysis/measurement_checks.py applies the same rules to the report).
#pragma once
#include <string>
#include <vector>

#include "train/study/study_medians.h"

namespace sb {

struct StudyProblem {
  size_t combination = 0;
  int gpus = 0;  // the row it concerns; 0: every row of the combination but its baseline
  std::string text;
};

// `unit` names a count in the singular: "GPU" or "rank".
std::vector<StudyProblem> study_problems(const std::vector<StudyMedian>& rows, const std::string& unit);

// Whether `row`'s speedup and efficiency are one of `problems`' subjects.
bool has_problem(const StudyMedian& row, const std::vector<StudyProblem>& problems);

}  // namespace sb
