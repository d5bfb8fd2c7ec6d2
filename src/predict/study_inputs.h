// What a prediction reads from a `scale` study (docs/results_schema.md): the trained model and its bucket
// size, the 1-GPU compute of each measured per-GPU batch, the measured step at every configuration (for
// the leave-one-out check) and, where the file records them, the buckets' ready times.
//
// Recorded ready times are read from `/configs/<group>/bucket_ready` of the configuration with the fewest
// GPUs that has them at the 1-GPU point's batch (one rank all-reduces nothing and records none, so a
// CUDA study's come from its 2-GPU point): float64, one
// value per bucket of that configuration's plan (train/engines/bucket_plan.h, its `bucket_mib`) in launch order,
// the seconds from the start of backward until the bucket's gradients are final (median over the
// run's steady steps, max over ranks), `units` = "s" (ResultsReader::bucket_ready). Without it the ready times come from the model's FLOPs.
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "models/model_input.h"
#include "predict/compute_profile.h"
#include "train/run_choices.h"

namespace sb::predict {

// One configuration of the study as measured (one repeat).
struct MeasuredConfig {
  std::string group;       // under /configs
  int64_t gpus = 0;
  int64_t repeat = 1;
  int64_t batch_size = 0;  // as recorded: per GPU under weak scaling, global under strong
  double step_s = 0;       // wall time per optimizer step, over the measured epochs
  // The step's compute, per step: backward (with the part beside an all-reduce) and the optimizer as their
  // phase columns time them (max over ranks), and before backward what the step keeps beyond those and the
  // exposed communication (data, forward, loss, host time). The compute factors' witness (compute_factor.h).
  StepCompute phases;
  double exposed_comm_s = 0;     // per step
  bool phases_measured = false;  // false: the file lacks a phase column, and `phases` says nothing
  // The ranks' spread in the measured epochs' sampled steps (rank_spread.h); nullopt for one rank or a
  // run that sampled no steps.
  std::optional<double> rank_spread = std::nullopt;
};

struct StudyInputs {
  std::string path;
  Scaling mode = Scaling::Weak;
  std::string model;
  ModelInput input;
  double bucket_mib = 25;
  bool allreduce_bf16 = false;
  Device device = Device::Cuda;  // the engine the study ran on
  int64_t run_batch_size = 0;  // the study's --batch-size
  std::vector<MeasuredConfig> configs;  // the DDP configurations of the study's precision
  std::optional<std::vector<double>> bucket_ready_s;  // recorded, of bucket_ready_group at bucket_mib
  std::string bucket_ready_group;                     // the group they come from
  double bucket_ready_backward_s = 0;                 // that group's backward per step
};

// Throws sb::UserError naming the file, with a hint, for a missing file, a file that is not a `scale`
// study, or one without a 1-GPU configuration.
StudyInputs read_study(const std::string& path);

// The 1-GPU run the model takes at a per-GPU batch: the lower median of the repeats by step time (a
// measured run, not a blend); nullptr where the study has no 1-GPU run at that batch.
const MeasuredConfig* one_gpu_run(const StudyInputs& study, int64_t batch);

// The 1-GPU compute at each measured batch: the phases of that batch's one_gpu_run, the step without its
// exposed communication (a one-rank all-reduce exchanges nothing).
std::vector<ComputePoint> one_gpu_compute(const StudyInputs& study);

}  // namespace sb::predict
