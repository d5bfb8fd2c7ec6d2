// scalebench io on a GPU: the training input pipeline of image files (HostInput: workers, pinned buffers,
// the upload or nvJPEG's decode, the crop kernel) run alone, a batch per step slot, with no model.
#pragma once
#include "comm/communicator.h"
#include "data/dataset.h"
#include "data/input_rate.h"
#include "train/engines/cuda/host_input.h"

namespace sb::cuda {

// Times `batches` training batches after `warm_up` untimed ones, each in device memory when counted.
InputRate measure_gpu_input(const Dataset& train, const Dataset& test, const HostInputOptions& options, int64_t warm_up,
                            int64_t batches, const Communicator& comm);

}  // namespace sb::cuda
