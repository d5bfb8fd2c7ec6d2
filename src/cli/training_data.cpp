#include "cli/training_data.h"

#include "core/error.h"
#include "core/fault_injection.h"
#include "core/log.h"
#include "data/image_data_sets.h"
#include "data/upscaling_note.h"
#include "models/registry.h"
#include "train/cache_folder.h"
#include "train/collective.h"
#include "train/run_setup.h"

namespace sb {

namespace {

// The options that image files rule out, refused before anything is read.
void check_image_file_options(const TrainConfig& config, const DatasetSpec& spec) {
  if (!streamed(spec)) {
    if (config.decode == ImageDecoding::Gpu)
      throw UserError("--decode gpu decodes image files (--data imagefolder:DIR or tars:DIR); --data " + to_string(spec) +
                      " is held decoded in memory: leave --decode out");
    return;
  }
#ifndef SCALEBENCH_HAVE_NVJPEG
  if (config.decode == ImageDecoding::Gpu)
    throw UserError("--decode gpu: this scalebench was built without nvJPEG; rebuild with a CUDA toolkit that has "
                    "nvjpeg.h and libnvjpeg (every CUDA module ships them), or use --decode cpu");
#endif
  if (config.parallel == Parallel::Dp)
    throw UserError("--parallel dp builds each batch on its first GPU from a data set in memory; image files "
                    "(--data " + to_string(spec) + ") need --parallel ddp");
  if (config.device == Device::Cuda && config.accumulate_steps > 1)
    throw UserError("image files are uploaded one batch per optimizer step and cannot feed --accumulate-steps " +
                    std::to_string(config.accumulate_steps) + "; use a larger --batch-size without accumulation");
}

}  // namespace

TrainTest load_training_data(Communicator& comm, const TrainConfig& config, const DatasetSpec& spec, int max_ranks) {
  check_image_file_options(config, spec);
  TrainTest data;
  run_collectively(comm, [&] {
    inject_fault_if_asked("load");
    DatasetSpec listed = spec;
    listed.bad_images = config.bad_images;
    data = load_dataset(listed, config.train_limit, cache_folder(config));
    set_image_sizes(data, config.image_size, config.val_resize);
    if (comm.rank() == 0) {
      if (const std::string note = upscaling_note(data.train); !note.empty()) log0("%s\n", note.c_str());
    }
    model_spec_for(config, data.train);  // refuses a model that does not fit the data, or its options
    const std::vector<int64_t> shards = shard_sizes(data.train);
    if (!shards.empty() && static_cast<int64_t>(shards.size()) < max_ranks) {  // each rank reads whole shards
      throw UserError("--data " + to_string(spec) + " has " + std::to_string(shards.size()) + " training shard(s) for " +
                      std::to_string(max_ranks) + " ranks, and each rank reads whole shards; pack it with a smaller "
                      "--shard-size, or run fewer ranks");
    }
    if (data.train.size() < max_ranks) {  // each rank read its own copy of the files
      throw UserError("the training set has " + std::to_string(data.train.size()) + " samples but the job runs " +
                      std::to_string(max_ranks) + " ranks; use fewer ranks or more samples (--train-limit)");
    }
  });
  return data;
}

}  // namespace sb
