#include "core/cuda_work_queues.h"

#include <cstdlib>

namespace sb {

void set_cuda_work_queues_unless_set() { setenv(kCudaWorkQueuesVariable, kCudaWorkQueues, /*overwrite=*/0); }

}  // namespace sb
