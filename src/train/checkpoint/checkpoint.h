// Checkpoints: the run state (docs/architecture.md, "One run state") in one HDF5 file, written by rank 0 to a
// temporary name and renamed into place, so that a job killed while writing keeps the previous one.
//
// The file starts with a 512-byte seal (an HDF5 user block): "SBCKPT01", the length and a checksum of
// the HDF5 content after it. read_checkpoint checks it before the HDF5 library reads anything, since
// that library is not safe on corrupt files (docs/fuzzing.md).
//
// Layout (schema "scalebench-checkpoint", version 2):
//   attributes: schema, schema_version, config_json, world_size, epoch (the next epoch to run, 0-based),
//     step_in_epoch (the next step within it), global_step, elapsed_s, best_accuracy,
//     epochs_without_improvement, evaluations_at_target (absent in older files: 0),
//     target_reached_s (only once the target was reached), optimizer_steps, loss_scale, scale_growth,
//     data_spec, data_train_samples, data_test_samples, data_labels_crc32 (the data's DataIdentity)
//   /params             float32 [P]          master weights (the same on every rank)
//   /buffers            float32 [world, B]   each rank's BN running statistics
//   /train_totals       float64 [world, 3]   each rank's partial epoch loss sum, correct, count
//   /optimizer/<name>   float32 [P]          optimizer state, in the optimizer's order (attribute `order`)
#pragma once
#include <limits>
#include <string>
#include <vector>

#include "comm/communicator.h"
#include "train/checkpoint/data_identity.h"
#include "train/engines/engine.h"
#include "train/run/loop_state.h"

namespace sb {

struct Checkpoint {
  std::string config_json;  // TrainConfig::to_json() of the run that wrote it
  DataIdentity data;
  int world_size = 1;
  LoopState loop;
  EngineState engine;                           // params and optimizer state from rank 0
  std::vector<std::vector<float>> rank_buffers;  // per rank
  std::vector<EvalTotals> rank_totals;          // per rank
};

// Collective: gathers every rank's buffers and partial totals; rank 0 writes `path` atomically (through
// a working file of its own, unique_working_path).
void save_checkpoint(Communicator& comm, Engine& engine, const std::string& config_json, const DataIdentity& data,
                     const LoopState& loop, const std::string& path);

// Collective: every rank's BN buffers and partial epoch totals of `state`, into into.rank_buffers and
// into.rank_totals on rank 0 (left as they are elsewhere).
void gather_rank_state(Communicator& comm, const EngineState& state, Checkpoint& into);

// The two halves of save_checkpoint. gather_checkpoint is collective and returns the whole state on rank 0
// (an empty Checkpoint elsewhere); write_checkpoint writes it (rank 0, no collective: a thread may call it).
Checkpoint gather_checkpoint(Communicator& comm, Engine& engine, const std::string& config_json, const DataIdentity& data,
                             const LoopState& loop);
void write_checkpoint(const Checkpoint& checkpoint, const std::string& path);

// Writes the seal of `path`, an HDF5 file created with the 512-byte user block (save_checkpoint does
// both; the fuzz harness reseals mutated files to reach the HDF5 layer). Aborts the job on I/O errors.
void seal_checkpoint(const std::string& path);

// Reads a checkpoint (any rank). Throws UserError naming the file for anything missing or malformed, and
// for a version 1 checkpoint (written before the data identity, so a resume could not check its data).
Checkpoint read_checkpoint(const std::string& path);

// Restores this rank's part of a checkpoint into the engine. A different world size is accepted only at
// an epoch boundary (the sampler then re-shards the next epoch; every rank takes rank 0's BN statistics);
// mid-epoch it is refused with a UserError (check_resumable_on_ranks, also asked before any work).
void restore_checkpoint(const Checkpoint& checkpoint, Communicator& comm, Engine& engine);
void check_resumable_on_ranks(const Checkpoint& checkpoint, int ranks);

}  // namespace sb
