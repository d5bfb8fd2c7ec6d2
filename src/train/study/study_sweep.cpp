#include "train/study/study_sweep.h"

#include <algorithm>
#include <charconv>
#include <cstring>
#include <stdexcept>

#include "core/error.h"
#include "train/train_options.h"

namespace sb {
namespace {

const TrainOption& option_row(const std::string& option) {
  const TrainOption* row = train_option_named(option);
  if (!row) throw std::logic_error("a sweep names the option '" + option + "', which no option row has");
  return *row;
}

const SweepAxis* axis_of(const std::vector<SweepAxis>& axes, const char* option) {
  const auto it = std::find_if(axes.begin(), axes.end(), [&](const SweepAxis& a) { return a.option == option; });
  return it == axes.end() ? nullptr : &*it;
}

const SweepableOption& sweep_of(const std::string& option) {
  for (const SweepableOption& sweep : sweepable_options())
    if (option == sweep.option) return sweep;
  throw std::logic_error("the option '" + option + "' is not sweepable");
}

// Checks a combination as `scale` checks its configuration; a refusal names the combination's sweeps.
void check_combination(const SweepCombination& combination, const std::vector<int>& gpu_counts,
                       const std::vector<std::string>& sweep_words) {
  try {
    combination.config.validate();
    for (int gpus : gpu_counts) configuration_for(combination.config, gpus).per_rank_batch(ranks_for(combination.config, gpus));
  } catch (const UserError& refusal) {
    if (sweep_words.empty()) throw;
    std::string named;
    for (const std::string& word : sweep_words) named += (named.empty() ? "" : " with ") + word;
    throw UserError(named + " cannot run in this study: " + refusal.what() + "; drop the value from the list");
  }
}

}  // namespace

std::span<const SweepableOption> sweepable_options() {
  static const SweepableOption rows[] = {
      {"sweep-batch-size", "batch-size", "values of --batch-size, one configuration each, e.g. 64,128,256"},
      {"sweep-precision", "precision", "values of --precision, one configuration each, e.g. fp32,bf16 (standard against mixed precision)"},
      {"sweep-workers", "workers", "values of --workers, one configuration each, e.g. 1,2,4,8 (with --input host, and with image files: the guides' --cpus-per-task sweep)"},
      {"parallel", "parallel",
       "ddp, dp or dp,ddp: the data-parallel modes of the study, each on every GPU count (dp: one rank drives the GPUs "
       "as nn.DataParallel, see train --parallel)"},
  };
  return rows;
}

SweepAxis parse_sweep(const SweepableOption& sweep, const std::string& text) {
  const TrainOption& row = option_row(sweep.option);
  SweepAxis axis{sweep.option, {}};
  size_t start = 0;
  while (start <= text.size()) {
    const size_t comma = std::min(text.find(',', start), text.size());
    const std::string item = text.substr(start, comma - start);
    start = comma + 1;
    if (item.empty())
      throw UserError(std::string("--") + sweep.sweep_name + " expects a comma-separated list of values, got '" + text + "'");
    TrainConfig scratch;
    row.field.parse(scratch, item, sweep.sweep_name);
    std::string value = row.field.show(scratch);
    if (std::find(axis.values.begin(), axis.values.end(), value) != axis.values.end())
      throw UserError(std::string("--") + sweep.sweep_name + " lists " + value + " twice");
    axis.values.push_back(std::move(value));
  }
  return axis;
}

std::vector<SweepCombination> sweep_combinations(const TrainConfig& base, const std::vector<SweepAxis>& axes,
                                                 const std::vector<int>& gpu_counts) {
  for (const SweepAxis& axis : axes) sweep_of(axis.option);  // every axis is one of the list
  std::vector<SweepCombination> combinations{SweepCombination{base, {}}};
  std::vector<std::vector<std::string>> words{{}};  // "--sweep-precision fp16" per swept value of each
  for (const SweepableOption& sweep : sweepable_options()) {
    const SweepAxis* axis = axis_of(axes, sweep.option);
    if (!axis) continue;
    const TrainOption& row = option_row(sweep.option);
    std::vector<SweepCombination> next;
    std::vector<std::vector<std::string>> next_words;
    for (size_t i = 0; i < combinations.size(); ++i) {
      for (const std::string& value : axis->values) {
        SweepCombination combination = combinations[i];
        row.field.parse(combination.config, value, sweep.sweep_name);
        combination.values.emplace_back(row.json_key, value);
        next.push_back(std::move(combination));
        next_words.push_back(words[i]);
        next_words.back().push_back(std::string("--") + sweep.sweep_name + " " + value);
      }
    }
    combinations = std::move(next);
    words = std::move(next_words);
  }
  for (size_t i = 0; i < combinations.size(); ++i) check_combination(combinations[i], gpu_counts, words[i]);
  return combinations;
}

TrainConfig configuration_for(const TrainConfig& config, int gpus) {
  TrainConfig c = config;
  if (c.parallel == Parallel::Dp) c.replicas = gpus;
  return c;
}

int ranks_for(const TrainConfig& config, int gpus) { return config.parallel == Parallel::Dp ? 1 : gpus; }

std::string config_suffix(const SweepCombination& combination, int repeat, int repeats) {
  std::string suffix;
  for (const auto& [key, value] : combination.values) suffix += "_" + key + "_" + value;
  if (repeats > 1) suffix += "_repeat_" + std::to_string(repeat);
  return suffix;
}

std::vector<std::string> swept_columns(const std::vector<SweepAxis>& axes) {
  std::vector<std::string> columns;
  for (const SweepableOption& sweep : sweepable_options())
    if (axis_of(axes, sweep.option)) columns.emplace_back(option_row(sweep.option).json_key);
  return columns;
}

void record_sweep_columns(const TrainConfig& config, StudyRow& row) {
  for (const SweepableOption& sweep : sweepable_options()) {
    const TrainOption& option = option_row(sweep.option);
    const auto columns = study_columns();
    const auto column = std::find_if(columns.begin(), columns.end(),
                                     [&](const Column& c) { return std::strcmp(c.name, option.json_key) == 0; });
    if (column == columns.end() || column->type != ColumnType::Int64)
      throw std::logic_error(std::string("the study has no int64 column ") + option.json_key + " for --" + sweep.sweep_name);
    // The value as the configuration JSON records it: a whole number, or a quoted name of the choices.
    // Anything else (an unset option recorded as null) keeps the column's "not recorded" value.
    std::string recorded = option.field.to_json(config);
    int64_t value = -1;
    if (!option.field.choices.empty()) {
      if (recorded.size() >= 2 && recorded.front() == '"' && recorded.back() == '"') recorded = recorded.substr(1, recorded.size() - 2);
      const auto it = std::find(option.field.choices.begin(), option.field.choices.end(), recorded);
      if (it != option.field.choices.end()) value = it - option.field.choices.begin();
    } else {
      const auto [end, ec] = std::from_chars(recorded.data(), recorded.data() + recorded.size(), value);
      if (ec != std::errc() || end != recorded.data() + recorded.size()) value = -1;
    }
    std::memcpy(reinterpret_cast<char*>(&row) + column->offset, &value, sizeof value);
  }
}

std::vector<std::pair<std::string, std::vector<std::string>>> sweep_value_names() {
  std::vector<std::pair<std::string, std::vector<std::string>>> names;
  for (const SweepableOption& sweep : sweepable_options()) {
    const TrainOption& option = option_row(sweep.option);
    if (!option.field.choices.empty()) names.emplace_back(option.json_key, option.field.choices);
  }
  return names;
}

}  // namespace sb
