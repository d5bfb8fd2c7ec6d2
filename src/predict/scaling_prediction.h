// The step at N GPUs under weak or strong scaling: the 1-GPU compute at the per-GPU batch, the
// training's bucket plan, each bucket's all-reduce from the all-reduce model, and the timeline.
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "nn/spec.h"
#include "predict/allreduce_model.h"
#include "predict/compute_profile.h"
#include "predict/gradient_ready.h"
#include "train/run_choices.h"

namespace sb::predict {

struct StepModel {
  ComputeProfile compute;
  std::vector<ParamSpec> params;     // the model's parameters: the bucket plan's input
  GradientReadyCurve ready;
  AllreduceModel allreduce;
  double gradient_bytes_per_element = 4;  // fp32 gradients; 2 with --allreduce-bf16
  // The CUDA engine all-reduces bucket by bucket during backward; the CPU engine all-reduces the whole
  // buffer once backward has finished (docs/architecture.md), which is one bucket ready at the end.
  bool buckets_overlap_backward = true;
};

struct ScalingPoint {
  int64_t gpus = 0;
  Scaling scaling = Scaling::Weak;
  double per_gpu_batch = 0;
  double bucket_mib = 0;
  double step_s = 0;
  double images_per_s = 0;
  double efficiency = 0;             // images/s over gpus x the 1-GPU images/s of the same scaling
  double exposed_comm_fraction = 0;  // exposed communication / step
  double comm_s = 0;                 // every all-reduce of the step, hidden or not
  int64_t buckets = 0;
};

// `batch`: per GPU under weak scaling, global under strong. nullopt when the compute at the per-GPU
// batch was not measured (ComputeProfile::at). Throws std::invalid_argument for a GPU count the
// all-reduce model cannot lay out on whole nodes.
std::optional<ScalingPoint> predict_point(const StepModel& model, int64_t gpus, Scaling scaling, int64_t batch, double bucket_mib);

// The point of the fastest bucket size among `bucket_mibs`; nullopt as predict_point.
std::optional<ScalingPoint> best_bucket_point(const StepModel& model, int64_t gpus, Scaling scaling, int64_t batch,
                                              const std::vector<double>& bucket_mibs);

// The smallest GPU count up to `largest` (those the model can lay out) whose exposed communication
// reaches `share` of the step; nullopt when none does (or the compute is not known there).
std::optional<int64_t> first_gpus_with_exposed_share(const StepModel& model, Scaling scaling, int64_t batch, double bucket_mib,
                                                     int64_t largest, double share);

}  // namespace sb::predict
