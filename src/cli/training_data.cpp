#include "cli/training_data.h"

#include "core/error.h"
#include "core/fault_injection.h"
#include "models/registry.h"
#include "train/cache_folder.h"
#include "train/collective.h"
#include "train/run_setup.h"

namespace sb {

TrainTest load_training_data(Communicator& comm, const TrainConfig& config, const DatasetSpec& spec, int max_ranks) {
  TrainTest data;
  run_collectively(comm, [&] {
    inject_fault_if_asked("load");
    data = load_dataset(spec, config.train_limit, cache_folder(config));
    model_spec_for(config, data.train);  // refuses a model that does not fit the data, or its options
    if (data.train.size() < max_ranks) {  // each rank read its own copy of the files
      throw UserError("the training set has " + std::to_string(data.train.size()) + " samples but the job runs " +
                      std::to_string(max_ranks) + " ranks; use fewer ranks or more samples (--train-limit)");
    }
  });
  return data;
}

}  // namespace sb
