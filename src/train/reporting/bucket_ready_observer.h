// The gradient buckets' ready times (metrics/bucket_ready_samples.h): each bucket's median over the run's
// steady steps so far, the slowest rank's, in every epoch's summary. Empty where the engine does not time
// its buckets.
#pragma once
#include "comm/communicator.h"
#include "metrics/bucket_ready_samples.h"
#include "train/run/train_observer.h"

namespace sb {

class BucketReadyObserver final : public TrainObserver {
 public:
  explicit BucketReadyObserver(Communicator& comm) : comm_(comm) {}

  void on_step_times(const PhaseTimes& t) override;
  void measure_epoch(EpochSummary& s) override;

 private:
  Communicator& comm_;
  BucketReadySamples samples_;
  int64_t steps_timed_ = 0;  // in the run
};

}  // namespace sb
