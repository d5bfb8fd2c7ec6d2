// The step at N GPUs under weak or strong scaling: the 1-GPU compute at the per-GPU batch, the
// training's bucket plan, each bucket's all-reduce from the all-reduce model, and the timeline.
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "nn/spec.h"
#include "predict/allreduce_model.h"
#include "predict/compute_factor.h"
#include "predict/compute_profile.h"
#include "predict/gradient_ready.h"
#include "predict/step_timeline.h"
#include "train/run_choices.h"

namespace sb::predict {

// Which of the overlap's two effects a calibration fitted (docs/prediction.md, "The multi-GPU calibration").
enum class OverlapParameter : int64_t { None = 0, Contention = 1, CommScale = 2, Wait = 3 };
const std::vector<std::string>& overlap_parameter_names();  // indexed by the code: none, contention, comm_scale, wait
const char* name_of(OverlapParameter parameter);

// The multi-GPU calibration at one measured GPU count: the compute factors measured there, and the overlap
// fitted there to what the factors leave of the measured step. Both apply at the multi-GPU counts whose
// all-reduce crosses the same levels (all within one node, or across nodes): the contention or wait of
// another interconnect is not carried. The all-reduce factor corrects the times of one source, and is carried only
// to counts whose times come from the same one (the sweep's measured curve, or the ring fitted to it).
struct OverlapCalibration {
  int64_t gpus = 0;  // the count it was fitted at; 0: none
  OverlapParameter parameter = OverlapParameter::None;
  Overlap overlap;
  bool at_bound = false;  // the fit stopped at the parameter's bound: the measured step is out of its reach
  ComputeFactor compute;  // the per-GPU compute at `gpus` over the 1-GPU compute, outside backward and on it
  // The ranks' spread measured at `gpus` (rank_spread.h), relative to the compute; 0: not measured. Unlike
  // the rest it is carried to every multi-GPU count, across nodes too: it is the cards', not the link's.
  double rank_spread = 0;
  double value() const;  // the fitted parameter's: a ratio, or seconds for the wait
};

struct StepModel {
  ComputeProfile compute;
  std::vector<ParamSpec> params;     // the model's parameters: the bucket plan's input
  GradientReadyCurve ready;
  AllreduceModel allreduce;
  double gradient_bytes_per_element = 4;  // fp32 gradients; 2 with --allreduce-bf16
  // The CUDA engine all-reduces bucket by bucket during backward; the CPU engine all-reduces the whole
  // buffer once backward has finished (docs/architecture.md), which is one bucket ready at the end.
  bool buckets_overlap_backward = true;
  OverlapCalibration calibration;  // none: the all-reduces and backward do not interact
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
  // How long the step waits for its slowest rank beyond the ranks' mean compute, over the step: the
  // calibration's spread times E[max of gpus deviations] (rank_spread.h); 0 without a measured spread.
  double slowest_rank_fraction = 0;
  int64_t buckets = 0;
};

// Whether the model's calibration applies at `gpus`: it has one, `gpus` is a multi-GPU count that spans nodes exactly when the
// calibration count does, and, for the all-reduce factor, the all-reduce times at `gpus` come from the
// same source as at the calibration count.
bool calibration_applies(const StepModel& model, int64_t gpus);

// Whether the calibration's compute factor applies at `gpus`: a multi-GPU count (the 1-GPU point is the
// compute itself) on the calibration count's side of the node boundary.
bool compute_factor_applies(const StepModel& model, int64_t gpus);

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
