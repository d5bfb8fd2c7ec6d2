// The sweeps of a scaling study: options of a run that `scale` varies besides the GPU count
// (--sweep-batch-size 64,128 --sweep-precision fp32,bf16). The study is the product of every given
// sweep, the GPU counts and the repeats; each swept value is checked against the rest of the
// configuration before any run starts.
#pragma once
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "metrics/results_schema.h"
#include "train/train_config.h"

namespace sb {

// An option `scale` can sweep: the list option of `scale` and the TrainConfig option row its values
// set. The /study column of its values is named by the row's JSON key (results_schema.h).
struct SweepableOption {
  const char* sweep_name;  // "sweep-batch-size"
  const char* option;      // "batch-size": a row of train_options()
  const char* help;
};

// Every sweepable option, in the order their axes nest (the first outermost).
std::span<const SweepableOption> sweepable_options();

// The values of one sweep, each in the option's canonical text ("bf16" for "BF16").
struct SweepAxis {
  std::string option;  // the TrainConfig option row
  std::vector<std::string> values;
};

// Parses `text` ("64,128,256") as values of `sweep`'s option. Throws UserError naming --<sweep_name>
// for an empty list, a value the option refuses, or a value listed twice.
SweepAxis parse_sweep(const SweepableOption& sweep, const std::string& text);

// One combination of swept values and the configuration it runs.
struct SweepCombination {
  TrainConfig config;
  std::vector<std::pair<std::string, std::string>> values;  // (JSON key, value), in sweep order
};

// The product of `axes` applied to `base`, nesting in sweepable_options() order; one combination (the
// base) when there are no axes. Every combination is validated and its batch must split over every
// count of `gpu_counts`; a refusal names the sweep and the value: "--sweep-precision lists fp16, which
// this study cannot run: ...".
std::vector<SweepCombination> sweep_combinations(const TrainConfig& base, const std::vector<SweepAxis>& axes,
                                                 const std::vector<int>& gpu_counts);

// The configuration of `gpus` GPUs: `config` itself, or with --parallel dp its `gpus` replicas.
TrainConfig configuration_for(const TrainConfig& config, int gpus);
// The ranks a configuration of `gpus` GPUs runs on: gpus, or 1 with --parallel dp (one process drives them).
int ranks_for(const TrainConfig& config, int gpus);

// The /configs group suffix of a combination and repeat: "_batch_size_64_precision_bf16", plus
// "_repeat_<r>" when the study repeats its configurations; "" for a study of GPU counts alone.
std::string config_suffix(const SweepCombination& combination, int repeat, int repeats);

// The /study columns of the swept axes, in sweep order (the table's `swept` attribute).
std::vector<std::string> swept_columns(const std::vector<SweepAxis>& axes);
// Fills the study row's column of every sweepable option from `config`, whether swept or not.
void record_sweep_columns(const TrainConfig& config, StudyRow& row);
// The names a named option's column codes index: ("precision", {"fp32", "tf32", "fp16", "bf16"}).
std::vector<std::pair<std::string, std::vector<std::string>>> sweep_value_names();

}  // namespace sb
