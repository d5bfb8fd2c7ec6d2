// Does a --resume continue the run its checkpoint belongs to? Asked before any expensive work or any
// write, so that a resume either continues the same run into the same results file or changes nothing.
#pragma once
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "train/checkpoint/checkpoint.h"
#include "train/config_json.h"
#include "train/renamed_model.h"
#include "train/train_config.h"
#include "train/train_options.h"

namespace sb {

// The command-line name of a config_json key ("--lr-warmup-epochs" for lr_warmup_epochs).
std::string option_for_key(const std::string& key);

// Throws UserError naming the first key that differs against the option rows' ResumeRule, with the stored and the given
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

// A configuration that names the CIFAR ResNet-18 by its old name (train/renamed_model.h) reads as
// `resnet18-cifar` in the resume checks; this throws UserError when `given_model` is not that name,
// saying that the name's meaning changed.
void check_model_meaning(const std::string& stored_json, const std::string& stored_what, const std::string& given_model);

// Everything a resume can check from the checkpoint and the configuration alone (every rank): the
// options (each row's ResumeRule, train/train_options.h), --epochs not fewer than the epochs begun, and the rank count.
void check_resume(const Checkpoint& checkpoint, const TrainConfig& config, int ranks);

// Rank 0, before anything is written: `out` must be the `train` results file of the checkpoint's run,
// of `ranks` ranks, holding exactly the checkpoint's finished epochs. Throws UserError naming the file,
// and for a missing file or another epoch count both counts.
void check_results_continuation(const std::string& out, const Checkpoint& checkpoint, const std::string& checkpoint_path,
                                int ranks);

}  // namespace sb
