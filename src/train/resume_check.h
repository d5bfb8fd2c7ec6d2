// Does a --resume continue the run its checkpoint belongs to? Asked before any expensive work or any
// write, so that a resume either continues the same run into the same results file or changes nothing.
#pragma once
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "train/checkpoint.h"
#include "train/train_config.h"

namespace sb {

// How a configuration key (TrainConfig::to_json) may differ between a checkpoint's run and its resume.
enum class ResumeRule {
  Free,         // may differ: output, logging, tracing and checkpointing
  NotFewer,     // --epochs: at least the epochs the checkpoint has begun
  SameData,     // --data: the same data set, compared in canonical form
};

struct ResumeOption {
  const char* key;     // in config_json
  const char* option;  // on the command line, with its dashes
  ResumeRule rule;
};

// The one table of options a resume treats specially; every other key of config_json must be equal.
std::span<const ResumeOption> resume_option_table();

// The command-line name of a config_json key ("--lr-warmup-epochs" for warmup_epochs).
std::string option_for_key(const std::string& key);

// The members of a flat JSON object (as TrainConfig::to_json writes it): key and the value's JSON text.
// Throws UserError naming `what` when the text is not such an object.
std::vector<std::pair<std::string, std::string>> flat_json_members(const std::string& text, const std::string& what);

// Throws UserError naming the first key that differs against the table, with the stored and the given
// value: "--lr: <stored_what> 1, <given_what> 0.5; ...". NotFewer keys are left to check_resume.
void check_same_run_options(const std::string& stored_json, const std::string& stored_what, const std::string& given_json,
                            const std::string& given_what);

// The epochs a checkpoint has begun: the finished ones plus the one it stopped inside, if any.
int epochs_begun(const Checkpoint& checkpoint);

// True when nothing is left to run: the checkpoint is at an epoch boundary with every epoch done.
bool resume_is_finished(const Checkpoint& checkpoint, const TrainConfig& config);

// Collective: every rank read the same checkpoint (its configuration, position and parameters), so that
// no rank resumes from an older copy on its own node. Throws an AgreedError naming the first rank that
// differs from rank 0.
void check_same_checkpoint_on_ranks(Communicator& comm, const Checkpoint& checkpoint, const std::string& path);

// Everything a resume can check from the checkpoint and the configuration alone (every rank): the
// options (resume_option_table), --epochs not fewer than the epochs begun, and the rank count.
void check_resume(const Checkpoint& checkpoint, const TrainConfig& config, int ranks);

// Rank 0, before anything is written: `out` must be the `train` results file of the checkpoint's run,
// of `ranks` ranks, holding exactly the checkpoint's finished epochs. Throws UserError naming the file,
// and for a missing file or another epoch count both counts.
void check_results_continuation(const std::string& out, const Checkpoint& checkpoint, const std::string& checkpoint_path,
                                int ranks);

}  // namespace sb
