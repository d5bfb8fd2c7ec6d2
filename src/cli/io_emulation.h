// `scalebench io --emulate-gpus LIST`: can this storage feed N GPUs per node? Every rank reads and
// decodes its share of the files and feeds its share of the node's emulated GPUs (emulated_training.h);
// rank 0 prints a row per count and the largest count that keeps the accelerator utilisation at 90%.
#pragma once
#include "cli/io_args.h"
#include "comm/mpi_session.h"
#include "data/dataset.h"

namespace sb {

// The checks and choices of the emulation's options (one --decode, --workers, the rate, --cold-cache),
// before any data is read; --rate-from is read here. Throws UserError, one sentence naming the option.
// --decode gpu's need of nvJPEG and a GPU is checked before, as for every io run.
void check_emulation_args(IoArgs& a, const MpiSession& session);
// The data's check against the options: every rank needs a whole batch of its share of the samples.
void check_emulation_data(const IoArgs& a, const TrainTest& data, int ranks);

void run_io_emulation(MpiSession& session, const IoArgs& a, const TrainTest& data);

}  // namespace sb
