#include "core/cuda_work_queues.h"

#include <cstdlib>

namespace sb {

void set_cuda_work_queues_unless_set() { setenv(kCudaWorkQueuesVariable, kCudaWorkQueues, /*overwrite=*/0); }

std::string cuda_work_queues() {
  const char* value = std::getenv(kCudaWorkQueuesVariable);
  return value ? value : "8";
}

}  // namespace sb
