// `scalebench io --emulate-gpus --decode gpu`: the batches of an emulated GPU built as training's
// --decode gpu builds them (gpu_decode_source.h: the workers read the files and nvJPEG decodes and crops
// them into the device batch of their ring slot, where the step reads them, as HostInput's steps do); a
// taken batch's labels are uploaded on a copy stream, whose time counts as the copy stage.
#pragma once
#include <memory>

#include "data/dataset.h"
#include "data/emulated_training.h"

namespace sb::cuda {

// The target on the current device; `data` (image files) must outlive it.
MakeEmulatedTarget gpu_decode_target(const Dataset& data, BatchFormat format, int64_t batch, int rank);

}  // namespace sb::cuda
