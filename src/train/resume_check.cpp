#include "train/resume_check.h"

#include <algorithm>
#include <cctype>
#include <filesystem>
#include <map>

#include "comm/config_check.h"
#include "core/error.h"
#include "metrics/results_reader.h"
#include "metrics/results_schema.h"
#include "train/data_identity.h"

namespace sb {
namespace {

constexpr ResumeOption kResumeOptions[] = {
    {"epochs", "--epochs", ResumeRule::NotFewer},
    {"data", "--data", ResumeRule::SameData},
    {"out", "--out", ResumeRule::Free},  // a results file may be moved between the runs
    {"log_interval", "--log-interval", ResumeRule::Free},
    {"sample_steps", "--sample-steps", ResumeRule::Free},
    {"trace", "--trace", ResumeRule::Free},
    {"collective_timeout", "--collective-timeout", ResumeRule::Free},
    {"checkpoint_every", "--checkpoint-every", ResumeRule::Free},
    {"checkpoint", "--checkpoint", ResumeRule::Free},
    {"resume", "--resume", ResumeRule::Free},
};

const ResumeOption* rule_for(const std::string& key) {
  for (const ResumeOption& o : kResumeOptions)
    if (key == o.key) return &o;
  return nullptr;
}

std::string changeable_list() {
  std::string text;
  for (const ResumeOption& o : kResumeOptions) {
    if (o.rule == ResumeRule::SameData) continue;
    if (!text.empty()) text += ", ";
    text += o.option;
  }
  return text;
}

std::string epochs_text(int64_t n) { return std::to_string(n) + (n == 1 ? " epoch" : " epochs"); }

}  // namespace

std::span<const ResumeOption> resume_option_table() { return kResumeOptions; }

std::string option_for_key(const std::string& key) {
  if (const ResumeOption* o = rule_for(key)) return o->option;
  if (key == "warmup_epochs") return "--lr-warmup-epochs";
  std::string option = "--" + key;
  std::replace(option.begin(), option.end(), '_', '-');
  return option;
}

std::vector<std::pair<std::string, std::string>> flat_json_members(const std::string& text, const std::string& what) {
  const auto bad = [&] { throw UserError(what + " holds a configuration that is not a flat JSON object; it was not written by scalebench"); };
  size_t i = 0;
  const auto skip_space = [&] {
    while (i < text.size() && std::isspace(static_cast<unsigned char>(text[i]))) ++i;
  };
  // A JSON string from text[i] == '"': its raw text, quotes and escapes included.
  const auto string_token = [&] {
    const size_t begin = i++;
    while (i < text.size() && text[i] != '"') i += text[i] == '\\' ? 2 : 1;
    if (i >= text.size()) bad();
    ++i;
    return text.substr(begin, i - begin);
  };
  std::vector<std::pair<std::string, std::string>> members;
  skip_space();
  if (i >= text.size() || text[i] != '{') bad();
  ++i;
  skip_space();
  if (i < text.size() && text[i] == '}') return members;
  while (true) {
    skip_space();
    if (i >= text.size() || text[i] != '"') bad();
    const std::string key = string_token();
    skip_space();
    if (i >= text.size() || text[i] != ':') bad();
    ++i;
    skip_space();
    std::string value;
    if (i < text.size() && text[i] == '"') {
      value = string_token();
    } else {  // a number, true, false or null
      const size_t begin = i;
      while (i < text.size() && text[i] != ',' && text[i] != '}' && !std::isspace(static_cast<unsigned char>(text[i]))) {
        if (text[i] == '{' || text[i] == '[' || text[i] == '"') bad();
        ++i;
      }
      value = text.substr(begin, i - begin);
      if (value.empty()) bad();
    }
    members.emplace_back(key.substr(1, key.size() - 2), value);
    skip_space();
    if (i >= text.size()) bad();
    if (text[i] == '}') break;
    if (text[i] != ',') bad();
    ++i;
  }
  ++i;  // past the closing brace
  skip_space();
  if (i != text.size()) bad();
  return members;
}

void check_same_run_options(const std::string& stored_json, const std::string& stored_what, const std::string& given_json,
                            const std::string& given_what) {
  std::map<std::string, std::string> stored, given;
  for (auto& [key, value] : flat_json_members(stored_json, stored_what)) stored[key] = value;
  for (auto& [key, value] : flat_json_members(given_json, given_what)) given[key] = value;
  std::map<std::string, std::string> keys;  // every key of either side, in name order
  for (const auto& [key, value] : stored) keys[key];
  for (const auto& [key, value] : given) keys[key];
  const std::string missing = "(not recorded)";
  for (const auto& [key, unused] : keys) {
    const ResumeOption* rule = rule_for(key);
    if (rule && rule->rule != ResumeRule::SameData) continue;  // Free, and NotFewer (check_resume)
    const auto s = stored.find(key), g = given.find(key);
    std::string was = s == stored.end() ? missing : s->second, is = g == given.end() ? missing : g->second;
    if (rule && rule->rule == ResumeRule::SameData && s != stored.end() && g != given.end()) {
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
  if (!file.has_attribute("schema_version") || file.int_attribute("schema_version") != kResultsSchemaVersion)
    throw UserError(where + " is not a scalebench results file of schema version " + std::to_string(kResultsSchemaVersion) +
                    "; pass the --out of the run that wrote " + ckpt);
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
