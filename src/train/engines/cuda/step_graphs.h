// The training step captured as CUDA graphs, one per step slot (step_inputs.h), so that the host can read
// step k-1's phase events while step k's graph runs, and per input buffer: a graph reads its batch at a
// fixed address, and a pipeline may leave each batch in one of several (data/cuda/input_pipeline.h). When
// to capture and replay is StepGraphPolicy's (step_graph_policy.h); this part makes the CUDA calls and
// knows whether the graphs are stale.
#pragma once
#include <cstdint>
#include <functional>
#include <vector>

#include "nn/cuda/cuda_handles.h"
#include "nn/cuda/device_buffer.h"  // device_buffer_generation: what stale() compares
#include "train/engines/cuda/step_inputs.h"

namespace sb::cuda {

class StepGraphs {
 public:
  // Captures enqueue_step(slot, buffer) on `stream` for every slot and each of `buffers` input buffers.
  // Returns false, with no graphs kept and a note logged, when the runtime refuses a capture or its
  // instantiation.
  bool capture(const CudaStream& stream, int buffers, const std::function<void(int slot, int buffer)>& enqueue_step);
  // Whether graphs are held and a DeviceBuffer has allocated since their capture (device_buffer_generation,
  // nn/cuda/device_buffer.h): a block whose address they hold may have been freed, and a replay would
  // write to it. Any path may grow a buffer (an eager step of other shapes, an evaluation of a larger
  // batch), so this is asked before every replay, whatever ran since.
  bool stale() const;
  void launch(int slot, int buffer, cudaStream_t stream);
  void drop();
  // Whether a graph was launched since the host last waited for the stream (settled): an eager all-reduce
  // must not start while a graph's may still run (NCCL's graph mixing is off: comm/cuda/nccl_communicator.h).
  bool in_flight() const { return in_flight_; }
  void settled() { in_flight_ = false; }

 private:
  std::vector<CudaGraphExec> graphs_;  // slot-major: the same number of input buffers per slot
  uint64_t captured_generation_ = 0;  // the allocation count the graphs' addresses belong to
  bool in_flight_ = false;
};

}  // namespace sb::cuda
