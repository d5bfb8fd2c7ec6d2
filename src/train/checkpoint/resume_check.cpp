#include "train/checkpoint/resume_check.h"

#include <algorithm>
#include <cctype>
#include <filesystem>
#include <map>

#include "comm/config_check.h"
#include "core/error.h"
#include "metrics/results_reader.h"
#include "metrics/results_schema.h"
#include "train/checkpoint/data_identity.h"

namespace sb {
namespace {

// The rule of a configuration key; Same for a key no row records (a checkpoint of another version).
ResumeRule rule_for(const std::string& key) {
  const TrainOption* row = train_option_for_key(key);
  return row ? row->resume : ResumeRule::Same;
}

std::string changeable_list() {
  std::string text;
  for (const TrainOption& row : train_options()) {
    if (row.resume != ResumeRule::Free && row.resume != ResumeRule::NotFewer) continue;
    if (!text.empty()) text += ", ";
    text += std::string("--") + row.name;
  }
  return text;
}

// The members of a configuration JSON under today's keys (an older key read as its row's), with the
// default of each option it does not record: a configuration written before an option existed ran
// with the default.
std::map<std::string, std::string> recorded_options(const std::string& json, const std::string& what) {
  std::map<std::string, std::string> members;
  for (auto& [key, value] : flat_json_members(json, what)) {
    if (is_retired_json_key(key)) continue;
    const TrainOption* row = train_option_for_key(key);
    members[row ? row->json_key : key] = value;
  }
  if (members.empty()) return members;  // nothing recorded at all: no defaults to assume
  if (names_the_cifar_resnet18_by_its_old_name(json, what)) members["model"] = "\"resnet18-cifar\"";
  static const TrainConfig defaults;
  for (const TrainOption& row : train_options())
    if (row.json_key && !members.count(row.json_key)) members[row.json_key] = row.field.to_json(defaults);
  return members;
}

std::string epochs_text(int64_t n) { return std::to_string(n) + (n == 1 ? " epoch" : " epochs"); }

}  // namespace

void check_model_meaning(const std::string& stored_json, const std::string& stored_what, const std::string& given_model) {
  if (given_model == "resnet18-cifar" || !names_the_cifar_resnet18_by_its_old_name(stored_json, stored_what)) return;
  throw UserError("--model " + given_model + ": " + stored_what + " --model resnet18, which then meant the CIFAR variant "
                  "(3x3 stem, no max-pool); the name's meaning changed (resnet18 is now torchvision's ResNet-18), so to "
                  "continue this run give --model resnet18-cifar");
}

std::string option_for_key(const std::string& key) {
  if (const TrainOption* row = train_option_for_key(key)) return std::string("--") + row->name;
  std::string option = "--" + key;
  std::replace(option.begin(), option.end(), '_', '-');
  return option;
}

void check_same_run_options(const std::string& stored_json, const std::string& stored_what, const std::string& given_json,
                            const std::string& given_what) {
  std::map<std::string, std::string> stored = recorded_options(stored_json, stored_what),
                                     given = recorded_options(given_json, given_what);
  std::map<std::string, std::string> keys;  // every key of either side, in name order
  for (const auto& [key, value] : stored) keys[key];
  for (const auto& [key, value] : given) keys[key];
  const std::string missing = "(not recorded)";
  for (const auto& [key, unused] : keys) {
    const ResumeRule rule = rule_for(key);
    if (rule == ResumeRule::Free || rule == ResumeRule::NotFewer) continue;  // NotFewer: check_resume
    const auto s = stored.find(key), g = given.find(key);
    std::string was = s == stored.end() ? missing : s->second, is = g == given.end() ? missing : g->second;
    if (rule == ResumeRule::SameData && s != stored.end() && g != given.end()) {
      // JSON strings of scalebench's own --data texts: no escapes to undo in a canonical comparison.
      const auto canonical = [](const std::string& json) {
        return canonical_data_spec(json.size() >= 2 ? json.substr(1, json.size() - 2) : json);
      };
      if (canonical(was) == canonical(is)) continue;
    }
    if (was == is) continue;
    throw UserError(option_for_key(key) + ": " + stored_what + " " + was + ", " + given_what + " " + is +
                    "; a resume continues the same run, so only " + changeable_list() + " may change");
  }
}

int epochs_begun(const Checkpoint& c) { return c.loop.epoch + (c.loop.step_in_epoch > 0 ? 1 : 0); }

bool resume_is_finished(const Checkpoint& c, const TrainConfig& config) {
  return c.loop.step_in_epoch == 0 && c.loop.epoch >= config.epochs;
}

void check_resume(const Checkpoint& c, const TrainConfig& config, int ranks) {
  const std::string what = "checkpoint " + config.resume;
  check_model_meaning(c.config_json, what + " was written with", config.model);
  check_same_run_options(c.config_json, what + " was written with", config.to_json(), "this command gives");
  if (config.epochs < epochs_begun(c)) {
    throw UserError("--epochs " + std::to_string(config.epochs) + " is fewer than the " + epochs_text(epochs_begun(c)) + " " +
                    what + " has begun; pass --epochs " + std::to_string(epochs_begun(c)) + " or more");
  }
  check_resumable_on_ranks(c, ranks);
}

void check_results_continuation(const std::string& out, const Checkpoint& c, const std::string& checkpoint_path, int ranks) {
  const int64_t done = c.loop.epoch;
  const std::string ckpt = "checkpoint " + checkpoint_path;
  std::error_code ec;
  if (!std::filesystem::exists(out, ec)) {
    throw UserError("--out " + out + ": there is no results file to continue (0 epochs), but " + ckpt + " has finished " +
                    epochs_text(done) + "; a resume appends to the results file of the run that wrote the checkpoint: "
                    "pass its --out (its new path if it was moved)");
  }
  const ResultsReader file(out);
  const std::string where = "the results file " + out;
  if (!file.has_attribute("schema_version"))
    throw UserError(where + " is not a scalebench results file; pass the --out of the run that wrote " + ckpt);
  if (const int64_t version = file.int_attribute("schema_version"); version != kResultsSchemaVersion)
    throw UserError(where + " has results schema version " + std::to_string(version) + ", and this scalebench writes version " +
                    std::to_string(kResultsSchemaVersion) + " (results/README.md), so it can't append to it; the file stays as it is: "
                    "finish the run with the scalebench that started it, or start it again with another --out");
  if (!file.has("/epochs") || file.has("/study") || file.has("/configs") || file.has("/comm"))
    throw UserError(where + " is not the file of a `scalebench train` run; pass the --out of the run that wrote " + ckpt);
  const std::vector<std::string> columns = file.epoch_column_names();
  for (const Column& column : epoch_columns()) {
    if (std::find(columns.begin(), columns.end(), column.name) == columns.end())
      throw UserError(where + " lacks the epochs column '" + column.name +
                      "' (an older scalebench wrote it), so this version can't continue it; start the run again");
  }
  check_same_run_options(file.has_attribute("config_json") ? file.string_attribute("config_json") : "{}",
                         where + " was written with", c.config_json, ckpt + " with");
  const int64_t file_ranks = file.has_attribute("world_size") ? file.int_attribute("world_size") : 0;
  if (file_ranks != ranks) {
    throw UserError(where + " holds the per-rank times of " + std::to_string(file_ranks) + " ranks, so a resume on " +
                    std::to_string(ranks) + " ranks can't continue it; resume with " + std::to_string(file_ranks) + " ranks");
  }
  const int64_t rows = static_cast<int64_t>(file.epochs().size());
  if (rows != done) {
    throw UserError(where + " holds " + epochs_text(rows) + " but " + ckpt + " has finished " + epochs_text(done) +
                    (rows > done ? "; the file is ahead of the checkpoint (a later checkpoint, or another run's file): resume from the "
                                   "checkpoint written last, or pass the results file of this checkpoint's run"
                                 : "; pass the results file of the run that wrote the checkpoint"));
  }
}

void check_same_checkpoint_on_ranks(Communicator& comm, const Checkpoint& checkpoint, const std::string& path) {
  const LoopState& loop = checkpoint.loop;
  std::string text = checkpoint.config_json + "|" + std::to_string(checkpoint.world_size) + "|" + std::to_string(loop.epoch) +
                     "|" + std::to_string(loop.step_in_epoch) + "|" + std::to_string(loop.global_step) + "|" +
                     std::to_string(checkpoint.engine.optimizer_steps) + "|";
  const auto& params = checkpoint.engine.params;
  text.append(reinterpret_cast<const char*>(params.data()), params.size() * sizeof(float));
  const std::vector<uint64_t> prints = comm.allgather(fnv1a_64(text));
  for (size_t r = 1; r < prints.size(); ++r) {
    if (prints[r] == prints[0]) continue;
    throw AgreedError("--resume " + path + ": rank " + std::to_string(r) + " reads another checkpoint than rank 0 (a different " +
                          "file or an older copy at that path on its node); every rank must read the same file",
                      comm.size(), comm.rank() == 0);
  }
}

}  // namespace sb
