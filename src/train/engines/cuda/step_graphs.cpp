#include "train/engines/cuda/step_graphs.h"

#include "core/cuda_check.h"
#include "core/log.h"
#include "train/engines/cuda/graph_memsets.h"

namespace sb::cuda {

bool StepGraphs::capture(const CudaStream& stream, int buffers,
                         const std::function<void(int slot, int buffer)>& enqueue_step) {
  drop();
  graphs_.resize(static_cast<size_t>(kStepSlots * buffers));
  // The memset nodes' replacements run at the capturing stream's priority, as its captured kernels do.
  int priority = 0;
  CHECK_CUDA(cudaStreamGetPriority(stream.get(), &priority));
  for (int k = 0; k < kStepSlots * buffers; ++k) {
    stream.begin_capture(cudaStreamCaptureModeThreadLocal);
    enqueue_step(k / buffers, k % buffers);
    CudaGraph graph;
    const cudaError_t end = stream.end_capture(graph);
    cudaError_t instantiated = cudaErrorUnknown;
    // Per-node priorities: the all-reduce nodes keep the communication stream's high priority.
    if (end == cudaSuccess) {
      replace_memset_nodes(graph.get(), priority);
      instantiated = CudaGraphExec::instantiate(graph, cudaGraphInstantiateFlagUseNodePriority,
                                                graphs_[static_cast<size_t>(k)]);
    }
    if (end != cudaSuccess || instantiated != cudaSuccess) {
      (void)cudaGetLastError();  // clears the capture's error so that the eager steps start clean
      log0("note: CUDA graph capture failed (%s); the training step runs without a graph\n",
           cudaGetErrorString(end != cudaSuccess ? end : instantiated));
      drop();
      return false;
    }
  }
  captured_generation_ = device_buffer_generation();
  return true;
}

bool StepGraphs::stale() const {
  return !graphs_.empty() && device_buffer_generation() != captured_generation_;
}

void StepGraphs::launch(int slot, int buffer, cudaStream_t stream) {
  const size_t buffers = graphs_.size() / kStepSlots;
  graphs_[static_cast<size_t>(slot) * buffers + static_cast<size_t>(buffer)].launch(stream);
  in_flight_ = true;
}

void StepGraphs::drop() { graphs_.clear(); }

}  // namespace sb::cuda
