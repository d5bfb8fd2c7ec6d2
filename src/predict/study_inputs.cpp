#include "predict/study_inputs.h"

#include <algorithm>
#include <cmath>
#include <set>

#include "core/error.h"
#include "data/dataset_spec.h"
#include "metrics/results_reader.h"
#include "predict/rank_spread.h"
#include "train/renamed_model.h"
#include "train/train_config.h"

namespace sb::predict {
namespace {

ModelInput input_of(const std::string& data) {
  const SampleShape shape = sample_shape(parse_dataset_spec(data));
  return ModelInput{shape.channels, shape.height, shape.width, shape.classes};
}

// The ranks' spread over the sampled steps of the measured epochs: each epoch samples as many steps
// (its first --sample-steps), so those are the last measured/recorded share of them; where the count
// does not divide (a partial epoch), all of them.
std::optional<double> measured_rank_spread(const StepSamples& samples, size_t recorded_epochs, size_t measured_epochs) {
  const size_t steps = samples.step_numbers.size();
  size_t first = 0;
  if (recorded_epochs > 0 && steps % recorded_epochs == 0) first = steps / recorded_epochs * (recorded_epochs - measured_epochs);
  return rank_spread_of(samples, first);
}

// The per-step figures of a configuration from its measured epochs (the last `measured` rows).
MeasuredConfig measure(const ResultsReader& reader, const std::string& group, const TrainConfig& config, int64_t measured_epochs) {
  std::vector<EpochRow> epochs = reader.epochs("/configs/" + group);
  const size_t recorded_epochs = epochs.size();
  if (measured_epochs > 0 && static_cast<size_t>(measured_epochs) < epochs.size())
    epochs.erase(epochs.begin(), epochs.end() - measured_epochs);
  double wall = 0, images = 0, backward = 0, optimizer = 0, exposed = 0, data_forward = 0;
  for (const EpochRow& e : epochs) {
    if (!(e.wall_time_max_s > 0)) continue;  // an epoch resumed after its last step
    wall += e.wall_time_max_s;
    images += e.images_per_s * e.wall_time_max_s;
    // The backward that ran beside an all-reduce is backward compute all the same (NaN before schema 3).
    backward += e.backward_s + (std::isnan(e.backward_overlap_s) ? 0.0 : e.backward_overlap_s);
    optimizer += e.optimizer_s;
    exposed += std::isnan(e.exposed_comm_s) ? 0.0 : e.exposed_comm_s;
    data_forward += e.data_s + e.forward_s;  // NaN stays NaN: no witness
  }
  MeasuredConfig m;
  m.group = group;
  m.gpus = reader.int_attribute("gpus", "/configs/" + group);
  m.repeat = reader.has_attribute("repeat", "/configs/" + group) ? reader.int_attribute("repeat", "/configs/" + group) : 1;
  m.batch_size = config.batch_size;
  m.rank_spread = measured_rank_spread(reader.steps("/configs/" + group), recorded_epochs, epochs.size());
  if (!(wall > 0) || !(images > 0)) return m;  // step_s 0: nothing measured
  const double global_step_images = static_cast<double>(config.batch_size) *
                                    (config.scaling == Scaling::Weak ? static_cast<double>(m.gpus) : 1.0);
  const double steps = images / global_step_images;
  m.step_s = wall / steps;
  m.phases.backward_s = backward / steps;
  m.phases.optimizer_s = optimizer / steps;
  m.exposed_comm_s = exposed / steps;
  m.phases_measured = !std::isnan(data_forward) && !std::isnan(backward) && !std::isnan(optimizer);
  m.phases.before_backward_s = std::max(0.0, m.step_s - m.phases.backward_s - m.phases.optimizer_s - m.exposed_comm_s);
  return m;
}

// A group's recorded ready times, where the file has them (schema 3 on: docs/results_schema.md).
std::optional<std::vector<double>> recorded_ready(const ResultsReader& reader, const std::string& path, const std::string& group) {
  try {
    std::vector<double> seconds = reader.bucket_ready("/configs/" + group);
    if (seconds.empty()) return std::nullopt;
    return seconds;
  } catch (const UserError& e) {
    throw UserError("--study '" + path + "': " + e.what());
  }
}

const char* const kStudyHint = "; run `scalebench scale --gpus 1,2,... --out STUDY.h5` to make one";

// The results file at `path`, which must hold a `scale` study.
ResultsReader open_study(const std::string& path) {
  std::optional<ResultsReader> reader;
  try {
    reader.emplace(path);
  } catch (const UserError& e) {
    throw UserError(std::string("--study: ") + e.what() + kStudyHint);
  }
  if (!reader->has("/study") || !reader->has("/configs")) {
    const std::string kind = reader->has("/comm") ? "a `comm` sweep (give it to --comm)" : "not a `scale` study";
    throw UserError("--study '" + path + "' is " + kind + kStudyHint);
  }
  return std::move(*reader);
}

// The study's DDP configurations of its precision that measured steps, with their step times.
std::vector<MeasuredConfig> measured_configs(const ResultsReader& reader, const std::string& path, const TrainConfig& root) {
  std::vector<MeasuredConfig> configs;
  for (const std::string& group : reader.config_names()) {
    const std::string json = reader.string_attribute("config_json", "/configs/" + group);
    const TrainConfig config = json.empty() ? root : TrainConfig::from_json(json, "--study '" + path + "' group " + group);
    if (config.parallel != Parallel::Ddp || config.precision != root.precision) continue;
    if (config.accumulate_steps != 1) {
      throw UserError("--study '" + path + "': configuration " + group + " accumulates " + std::to_string(config.accumulate_steps) +
                      " micro-batches per step, which the step model does not cover; measure a study with --accumulate-steps 1");
    }
    // The group's epochs are its warm-up epochs followed by the study's measured ones (`epochs` of the root).
    MeasuredConfig m = measure(reader, group, config, root.epochs);
    if (m.step_s > 0) configs.push_back(m);
  }
  return configs;
}

// The 1-GPU configuration at the study's own batch, else any: its options and recorded times describe the model.
const MeasuredConfig& one_gpu_config(const std::vector<MeasuredConfig>& configs, const std::string& path, int64_t batch_size) {
  auto one_gpu = std::find_if(configs.begin(), configs.end(),
                              [&](const MeasuredConfig& c) { return c.gpus == 1 && c.batch_size == batch_size; });
  if (one_gpu == configs.end())
    one_gpu = std::find_if(configs.begin(), configs.end(), [](const MeasuredConfig& c) { return c.gpus == 1; });
  if (one_gpu == configs.end()) {
    throw UserError("--study '" + path + "' has no measured 1-GPU configuration of its precision with DDP, which the prediction "
                    "scales from; run the study with --gpus 1,... (1 first)");
  }
  return *one_gpu;
}

// One rank has no buckets and records no ready times (docs/architecture.md): then the smallest
// multi-GPU configuration of the same bucket plan gives them, as fractions of its own backward.
void find_bucket_ready_times(StudyInputs& s, const ResultsReader& reader, const std::string& path, int64_t batch_size) {
  std::vector<const MeasuredConfig*> by_gpus;
  for (const MeasuredConfig& c : s.configs) by_gpus.push_back(&c);
  std::stable_sort(by_gpus.begin(), by_gpus.end(), [](const MeasuredConfig* a, const MeasuredConfig* b) { return a->gpus < b->gpus; });
  for (const MeasuredConfig* c : by_gpus) {
    if (c->batch_size != batch_size) continue;
    s.bucket_ready_s = recorded_ready(reader, path, c->group);
    if (!s.bucket_ready_s) continue;
    s.bucket_ready_group = c->group;
    s.bucket_ready_backward_s = c->phases.backward_s;
    break;
  }
}

}  // namespace

StudyInputs read_study(const std::string& path) {
  const ResultsReader reader = open_study(path);
  StudyInputs s;
  s.path = path;
  const TrainConfig root = TrainConfig::from_json(reader.string_attribute("config_json"), "--study '" + path + "'");
  s.mode = root.scaling;
  s.run_batch_size = root.batch_size;
  s.configs = measured_configs(reader, path, root);
  const MeasuredConfig& one_gpu = one_gpu_config(s.configs, path, root.batch_size);
  const std::string json = reader.string_attribute("config_json", "/configs/" + one_gpu.group);
  const TrainConfig config = json.empty() ? root : TrainConfig::from_json(json, "--study '" + path + "'");
  // A study recorded before `resnet18` meant torchvision's network measured the CIFAR variant.
  const std::string& recorded = json.empty() ? reader.string_attribute("config_json") : json;
  s.model = names_the_cifar_resnet18_by_its_old_name(recorded, "--study '" + path + "'") ? "resnet18-cifar" : config.model;
  s.input = input_of(config.data);
  s.bucket_mib = config.bucket_mib;
  s.allreduce_bf16 = config.allreduce_bf16;
  s.device = config.device;
  find_bucket_ready_times(s, reader, path, one_gpu.batch_size);
  return s;
}

const MeasuredConfig* one_gpu_run(const StudyInputs& study, int64_t batch) {
  std::vector<const MeasuredConfig*> runs;
  for (const MeasuredConfig& c : study.configs)
    if (c.gpus == 1 && c.batch_size == batch) runs.push_back(&c);
  if (runs.empty()) return nullptr;
  std::stable_sort(runs.begin(), runs.end(), [](const MeasuredConfig* a, const MeasuredConfig* b) { return a->step_s < b->step_s; });
  return runs[(runs.size() - 1) / 2];
}

std::vector<ComputePoint> one_gpu_compute(const StudyInputs& study) {
  std::set<int64_t> batches;
  for (const MeasuredConfig& c : study.configs)
    if (c.gpus == 1) batches.insert(c.batch_size);
  std::vector<ComputePoint> points;
  for (int64_t batch : batches) points.push_back({batch, one_gpu_run(study, batch)->phases});
  return points;
}

}  // namespace sb::predict
