// Writes each epoch's summary into a RunWriter of the results file (rank 0 only; other ranks pass none).
#pragma once
#include "metrics/results_file.h"
#include "train/run/train_observer.h"

namespace sb {

// The epoch's /epochs row: the columns its observers wrote (EpochSummary::measured) and the loop's
// figures, its phases and its clocks.
EpochRow to_epoch_row(const EpochSummary& s);

class ResultsObserver final : public TrainObserver {
 public:
  // writer: nullptr on ranks that write nothing.
  explicit ResultsObserver(RunWriter* writer) : writer_(writer) {}
  void on_epoch_end(const EpochSummary& s) override;

 private:
  RunWriter* writer_;
};

}  // namespace sb
