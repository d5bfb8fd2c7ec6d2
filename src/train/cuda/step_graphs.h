// The training step captured as CUDA graphs, one per step slot (step_inputs.h), so that the host can read
// step k-1's phase events while step k's graph runs. When to capture and replay is StepGraphPolicy's
// (step_graph_policy.h); this part makes the CUDA calls.
#pragma once
#include <array>
#include <functional>

#include "nn/cuda/cuda_handles.h"
#include "train/cuda/step_inputs.h"

namespace sb::cuda {

class StepGraphs {
 public:
  // Captures enqueue_step(slot) on `stream` for every slot. Returns false, with no graphs kept and a note
  // logged, when the runtime refuses the capture or its instantiation.
  bool capture(const CudaStream& stream, const std::function<void(int slot)>& enqueue_step);
  void launch(int slot, cudaStream_t stream) const;
  void drop();

 private:
  std::array<CudaGraphExec, kStepSlots> graphs_;
};

}  // namespace sb::cuda
