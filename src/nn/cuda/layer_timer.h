// GPU time per layer of a CUDA network, for the per-layer profile (bench/layer_profile.cpp,
// docs/performance.md). When a Context carries a LayerTimer, Sequential and Residual record a CUDA event
// pair around each leaf step (a layer, or a fused run of several) and each residual add, on the context's
// stream. Events cannot sit in a captured CUDA graph: profile outside the training step's graph.
#pragma once
#include <cuda_runtime_api.h>

#include <cstddef>
#include <string>
#include <vector>

namespace sb::cuda {

class LayerTimer {
 public:
  struct Row {
    std::string label;           // the layer's name; a fused run's names joined by '+'
    double forward_s = 0.0;      // summed over the collected passes
    double backward_s = 0.0;
    int forward_calls = 0, backward_calls = 0;
  };

  LayerTimer() = default;
  ~LayerTimer();
  LayerTimer(const LayerTimer&) = delete;
  LayerTimer& operator=(const LayerTimer&) = delete;

  // Brackets one layer's work queued on `stream`; pairs must not nest.
  void begin(const std::string& label, bool backward, cudaStream_t stream);
  void end(cudaStream_t stream);

  // Waits for the recorded events and adds their times to the rows; the event pool is then reused.
  void collect();
  // Rows in first-recorded order (forward order of the network).
  const std::vector<Row>& rows() const { return rows_; }

 private:
  struct Pending {
    size_t row;
    bool backward;
    cudaEvent_t start, stop;
  };
  cudaEvent_t next_event();

  std::vector<Row> rows_;
  std::vector<Pending> pending_;
  std::vector<cudaEvent_t> pool_;
  size_t pool_used_ = 0;
  bool open_ = false;
};

}  // namespace sb::cuda
