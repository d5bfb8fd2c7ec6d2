// scalebench io on a GPU: the training input pipeline of image files (HostInput: workers, pinned buffers,
// the upload or nvJPEG's decode, the crop kernel) run alone, a batch per step slot, with no model.
#pragma once
#include "data/cuda/input_pipeline.h"
#include "data/dataset.h"
#include "data/input_rate.h"

namespace sb::cuda {

// Times `batches` training batches after `warm_up` untimed ones, each in device memory when counted.
// wait: how the host waits for the GPU.
InputRate measure_gpu_input(const Dataset& train, const Dataset& test, const InputPipelineOptions& options,
                            int64_t warm_up, int64_t batches, const WaitForEvent& wait);

}  // namespace sb::cuda
