#include "predict/scaling_prediction.h"

#include "predict/rank_spread.h"
#include "predict/step_timeline.h"
#include "train/engines/bucket_plan.h"

namespace sb::predict {
namespace {

double per_gpu_batch(Scaling scaling, int64_t batch, int64_t gpus) {
  return scaling == Scaling::Weak ? static_cast<double>(batch) : static_cast<double>(batch) / static_cast<double>(gpus);
}

}  // namespace

const std::vector<std::string>& overlap_parameter_names() {
  static const std::vector<std::string> names = {"none", "contention", "comm_scale", "wait"};  // by the enum's codes
  return names;
}

const char* name_of(OverlapParameter parameter) { return overlap_parameter_names().at(static_cast<size_t>(parameter)).c_str(); }

double OverlapCalibration::value() const {
  switch (parameter) {
    case OverlapParameter::CommScale:
      return overlap.comm_scale;
    case OverlapParameter::Wait:
      return overlap.wait_s;
    case OverlapParameter::None:
    case OverlapParameter::Contention:
      break;
  }
  return overlap.contention;
}

bool calibration_applies(const StepModel& model, int64_t gpus) {
  const OverlapCalibration& c = model.calibration;
  // One GPU exchanges nothing and waits for no other rank.
  if (c.gpus == 0 || gpus < 2 || (model.allreduce.nodes(gpus) > 1) != (model.allreduce.nodes(c.gpus) > 1)) return false;
  return c.parameter != OverlapParameter::CommScale ||
         model.allreduce.uses_measured_curve(gpus) == model.allreduce.uses_measured_curve(c.gpus);
}

bool compute_factor_applies(const StepModel& model, int64_t gpus) {
  const OverlapCalibration& c = model.calibration;
  return c.gpus != 0 && gpus >= 2 && (model.allreduce.nodes(gpus) > 1) == (model.allreduce.nodes(c.gpus) > 1);
}

namespace {

struct SimulatedStep {
  StepTimeline timeline;
  double slowest_rank_s = 0;  // the slowest rank's lateness behind the ranks' mean compute
};

// The step the timeline gives, then the slowest rank's lateness beyond what the calibration count's step
// already holds (its compute factors and wait were measured with it): from that count where its
// calibration applies, from one GPU (no lateness) where it does not, and none without a measured spread.
std::optional<SimulatedStep> step_at(const StepModel& model, int64_t gpus, double local_batch, double bucket_mib, int64_t* buckets_out) {
  std::optional<StepCompute> compute = model.compute.at(local_batch);
  if (!compute) return std::nullopt;
  const bool calibrated_level = compute_factor_applies(model, gpus);
  if (calibrated_level) {
    const ComputeFactor& f = model.calibration.compute;
    compute = compute->scaled(f.value, f.backward);
  }
  const int64_t bucket_elements = bucket_elements_of_mib(bucket_mib);
  const std::vector<Bucket> plan = model.buckets_overlap_backward
                                       ? plan_buckets(model.params, bucket_elements, default_tail_elements(bucket_elements))
                                       : std::vector<Bucket>{{0, count_elements(model.params)}};
  const std::vector<double> ready = model.ready.bucket_ready_fractions(plan);
  std::vector<BucketComm> comm;
  for (size_t i = 0; i < plan.size(); ++i) {
    const double bytes = static_cast<double>(plan[i].end - plan[i].begin) * model.gradient_bytes_per_element;
    comm.push_back({ready[i], model.allreduce.seconds(gpus, bytes)});
  }
  if (buckets_out) *buckets_out = static_cast<int64_t>(plan.size());
  SimulatedStep step{simulate_step(*compute, comm, calibration_applies(model, gpus) ? model.calibration.overlap : Overlap{})};
  const double spread = model.calibration.rank_spread;
  if (gpus >= 2 && spread > 0) {
    step.slowest_rank_s = slowest_rank_delay_s(spread, compute->total(), gpus, 1);
    step.timeline.step_s += slowest_rank_delay_s(spread, compute->total(), gpus, calibrated_level ? model.calibration.gpus : 1);
  }
  return step;
}

}  // namespace

std::optional<ScalingPoint> predict_point(const StepModel& model, int64_t gpus, Scaling scaling, int64_t batch, double bucket_mib) {
  ScalingPoint p;
  p.gpus = gpus;
  p.scaling = scaling;
  p.per_gpu_batch = per_gpu_batch(scaling, batch, gpus);
  p.bucket_mib = bucket_mib;
  const std::optional<SimulatedStep> step = step_at(model, gpus, p.per_gpu_batch, bucket_mib, &p.buckets);
  // The ideal: the same global work on one GPU, at the batch that scaling gives it there.
  const std::optional<SimulatedStep> one = step_at(model, 1, per_gpu_batch(scaling, batch, 1), bucket_mib, nullptr);
  if (!step || !one) return std::nullopt;
  const StepTimeline& t = step->timeline;
  p.step_s = t.step_s;
  p.images_per_s = p.per_gpu_batch * static_cast<double>(gpus) / t.step_s;
  const double one_images_per_s = static_cast<double>(batch) / one->timeline.step_s;
  p.efficiency = p.images_per_s / (static_cast<double>(gpus) * one_images_per_s);
  p.exposed_comm_fraction = t.exposed_comm_s / t.step_s;
  p.comm_s = t.comm_s;
  p.slowest_rank_fraction = step->slowest_rank_s / t.step_s;
  return p;
}

std::optional<ScalingPoint> best_bucket_point(const StepModel& model, int64_t gpus, Scaling scaling, int64_t batch,
                                              const std::vector<double>& bucket_mibs) {
  std::optional<ScalingPoint> best;
  for (double mib : bucket_mibs) {
    const std::optional<ScalingPoint> p = predict_point(model, gpus, scaling, batch, mib);
    if (!p) return std::nullopt;
    if (!best || p->step_s < best->step_s) best = p;  // the first, smaller size wins a tie
  }
  return best;
}

std::optional<int64_t> first_gpus_with_exposed_share(const StepModel& model, Scaling scaling, int64_t batch, double bucket_mib,
                                                     int64_t largest, double share) {
  for (int64_t gpus = 2; gpus <= largest; ++gpus) {
    if (!model.allreduce.layout_problem(gpus).empty()) continue;
    const std::optional<ScalingPoint> p = predict_point(model, gpus, scaling, batch, bucket_mib);
    if (p && p->exposed_comm_fraction >= share) return gpus;
  }
  return std::nullopt;
}

}  // namespace sb::predict
