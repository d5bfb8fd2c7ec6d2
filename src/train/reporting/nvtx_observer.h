// The run's NVTX ranges (core/nvtx_ranges.h) for Nsight Systems: each epoch, each step and each
// evaluation. Ranges nest on the loop's thread; a run that stops mid-epoch closes its epoch's range.
#pragma once
#include <optional>

#include "core/nvtx_ranges.h"
#include "train/run/train_observer.h"

namespace sb {

class NvtxObserver final : public TrainObserver {
 public:
  void on_epoch_start(const EpochStart& e) override { epoch_.emplace(nvtx_epoch_name(e.epoch)); }
  void on_step_start(const StepInfo&) override { step_.emplace(kNvtxStep); }
  void on_step_end(const PhaseTimes&) override { step_.reset(); }
  void on_evaluation_start(int) override { evaluation_.emplace(kNvtxEvaluation); }
  void on_evaluation_end(int) override { evaluation_.reset(); }
  void on_epoch_closed(int) override { epoch_.reset(); }
  void on_run_end(const RunEnd&) override { epoch_.reset(); }

 private:
  std::optional<NvtxRange> epoch_, step_, evaluation_;
};

}  // namespace sb
