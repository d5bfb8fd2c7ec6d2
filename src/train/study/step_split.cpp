#include "train/study/step_split.h"

#include <algorithm>
#include <cstdio>
#include <span>
#include <utility>

#include "train/reporting/progress_line.h"
#include "train/study/scaling_study.h"

namespace sb {
namespace {

// The input pipeline's work over `epochs` (every rank's workers summed): what a worker builds per busy
// second; nullopt for a data set held in memory.
std::optional<InputTotals> input_work(std::span<const EpochSummary* const> epochs) {
  std::optional<InputTotals> sum;
  for (const EpochSummary* e : epochs) {
    if (!e->input) continue;
    if (!sum) sum.emplace();
    sum->read_seconds += e->input->read_seconds;
    sum->decode_seconds += e->input->decode_seconds;
    sum->augment_seconds += e->input->augment_seconds;
    sum->images += e->input->images;
  }
  return sum;
}

// Compute where AU reaches the bar; below it, the largest of the parts that keep the accelerator waiting.
StepLimit largest_wait(const StepSplit& s) {
  if (s.utilisation >= kUtilisationBar) return StepLimit::compute;
  const std::pair<double, StepLimit> waits[] = {{s.input, StepLimit::input},
                                                {s.comm, StepLimit::communication},
                                                {std::isfinite(s.skew) ? s.skew : 0, StepLimit::skew},
                                                {s.rest, StepLimit::rest}};
  std::pair<double, StepLimit> largest{-INFINITY, StepLimit::none};
  for (const auto& wait : waits)
    if (wait.first > largest.first) largest = wait;
  return largest.second;
}

std::string percent(double share, int decimals = 0) {
  if (!std::isfinite(share)) return "n/a";
  char text[32];
  std::snprintf(text, sizeof text, "%.*f%%", decimals, 100.0 * share);
  return text;
}

// What the limit is, in plain words.
std::string limit_words(const RunStepSplit& run) {
  const StepSplit& s = run.split;
  switch (s.limit) {
    case StepLimit::compute: return "limited by compute";
    case StepLimit::input: return "limited by input";
    case StepLimit::communication: return "limited by communication";
    case StepLimit::skew:
      return s.late_rank >= 0 ? "limited by waiting for rank " + std::to_string(s.late_rank) : "limited by waiting for other ranks";
    case StepLimit::rest: return "limited by time outside the timed phases (the loop between steps)";
    case StepLimit::none: break;
  }
  return "no limit named";
}

// The workers a 90% AU needs, or why no count of them reaches it; "" where the input has no hint.
std::string input_hint(const RunStepSplit& run) {
  const double bar = 100.0 * kUtilisationBar;
  if (run.gpu_decoded && run.split.limit == StepLimit::input)
    return ": nvJPEG decodes the images (--decode gpu), more CPU workers do not feed it faster "
           "(scalebench io --decode gpu --emulate-gpus measures the pipeline alone)";
  char text[320];
  if (!run.workers) return "";
  const WorkersForBar& w = *run.workers;
  const char* joint = run.split.limit == StepLimit::input ? ":" : ";";
  if (!w.reachable) {
    std::snprintf(text, sizeof text, "%s no worker count reaches %.0f%% AU: without any input wait the other parts hold it at %.0f%%",
                  joint, bar, 100.0 * w.au_without_input);
    return text;
  }
  std::string given;
  if (run.workers_given > 0) given = " (this run: " + std::to_string(run.workers_given) + ")";
  std::snprintf(text, sizeof text,
                "%s %.0f%% AU needs %s images/s a rank: %d worker(s)%s at the %s images/s one built per busy second "
                "(scalebench io --emulate-gpus measures the pipeline alone)",
                joint, bar, with_thousands(w.images_per_s).c_str(), w.workers, given.c_str(),
                with_thousands(w.images_per_worker_s).c_str());
  return text;
}

}  // namespace

StepSplit split_step(const StepParts& parts, double step_s) {
  StepSplit s;
  s.rank = parts.rank;
  s.steps = parts.steps;
  s.late_rank = parts.late_rank;
  if (parts.rank < 0 || !(std::isfinite(step_s) && step_s > 0)) return s;
  s.step_s = step_s;
  s.compute = parts.compute_s / step_s;
  s.optimizer = parts.optimizer_s / step_s;
  s.input = parts.input_s / step_s;
  s.comm = parts.exposed_comm_s / step_s;
  s.skew = parts.skew_s / step_s;
  s.rest = 1 - (s.compute + s.optimizer + s.input + s.comm + (std::isfinite(s.skew) ? s.skew : 0));
  s.utilisation = s.compute + s.optimizer;
  s.limit = largest_wait(s);
  return s;
}

WorkersForBar workers_for_bar(const StepParts& parts, double step_s, double images_per_rank_step, const InputTotals& input,
                              InputBuild build, double bar) {
  WorkersForBar w;
  const double c = parts.compute_s + parts.optimizer_s;
  const double o = step_s - parts.input_s - c;
  if (!(c > 0 && std::isfinite(o))) return w;
  w.au_without_input = c / (c + std::max(o, 0.0));
  w.reachable = w.au_without_input >= bar;
  w.images_per_worker_s = images_per_worker_second(input);
  const double budget = build == InputBuild::in_step ? c / bar - c - std::max(o, 0.0) : c / bar;
  if (!w.reachable || !(budget > 0)) {
    w.reachable = false;
    return w;
  }
  w.images_per_s = images_per_rank_step / budget;
  w.workers = workers_needed(w.images_per_s, input);
  return w;
}

RunStepSplit split_run_step(const RunSummary& run, const TrainConfig& config, int settle_epochs) {
  RunStepSplit out;
  out.workers_given = config.workers;
  if (run.epochs.empty() || run.epochs.back().rank_wall_times.empty()) return out;  // not root
  const std::vector<const EpochSummary*> epochs = median_epochs(steady_epochs(run, settle_epochs));
  double wall_s = 0, steps = 0, images = 0;
  for (const EpochSummary* e : epochs) {
    wall_s += e->wall_max;
    steps += static_cast<double>(e->steps - e->steps_resumed);  // a resumed epoch timed only its own
    images += static_cast<double>(e->global_samples);
  }
  if (!(steps > 0)) return out;
  const StepParts parts = sampled_step_parts(epochs);
  const double step_s = wall_s / steps;  // the epochs' mean step, as the parts are their steps' means
  out.split = split_step(parts, step_s);
  const std::optional<InputTotals> input = input_work(epochs);
  if (!input) return out;  // a data set held in memory: no workers decode
  out.gpu_decoded = config.decode == ImageDecoding::Gpu;
  const bool below_bar = std::isfinite(out.split.utilisation) && out.split.utilisation < kUtilisationBar;
  if (out.gpu_decoded || input->images <= 0 || !below_bar) return out;
  const InputBuild build = config.device == Device::Cpu ? InputBuild::in_step : InputBuild::ahead;
  const double images_per_rank_step = images / steps / static_cast<double>(epochs.back()->rank_wall_times.size());
  out.workers = workers_for_bar(parts, step_s, images_per_rank_step, *input, build);
  return out;
}

std::string step_split_line(const RunStepSplit& run) {
  const StepSplit& s = run.split;
  if (s.rank < 0 || !std::isfinite(s.step_s)) return "step split: not measured (no sampled steps: --sample-steps 0)";
  char text[320];
  std::snprintf(text, sizeof text,
                "step split: %.1f ms a step on rank %d over %lld sampled steps: compute %s, input wait %s, optimizer %s, "
                "communication %s, skew %s, rest %s; AU %s, ",
                1e3 * s.step_s, s.rank, static_cast<long long>(s.steps), percent(s.compute).c_str(), percent(s.input).c_str(),
                percent(s.optimizer).c_str(), percent(s.comm).c_str(), percent(s.skew).c_str(), percent(s.rest).c_str(),
                percent(s.utilisation, 1).c_str());
  return text + limit_words(run) + input_hint(run);
}

std::vector<NamedValue> step_split_attributes(const RunStepSplit& s) {
#define SB_STEP_SPLIT_VALUE(name, unit, value) NamedValue{#name, static_cast<double>(value)},
  return {SB_STEP_SPLIT_ATTRIBUTES(SB_STEP_SPLIT_VALUE)};
#undef SB_STEP_SPLIT_VALUE
}

}  // namespace sb
