#include "nn/cuda/layer_timer.h"

#include "core/cuda_check.h"
#include "core/error.h"

namespace sb::cuda {

LayerTimer::~LayerTimer() {
  for (cudaEvent_t e : pool_) cudaEventDestroy(e);
}

cudaEvent_t LayerTimer::next_event() {
  if (pool_used_ == pool_.size()) {
    cudaEvent_t e = nullptr;
    CHECK_CUDA(cudaEventCreate(&e));
    pool_.push_back(e);
  }
  return pool_[pool_used_++];
}

void LayerTimer::begin(const std::string& label, bool backward, cudaStream_t stream) {
  if (open_) fatal("LayerTimer: '" + label + "' begins inside another layer's range");
  size_t row = 0;
  while (row < rows_.size() && rows_[row].label != label) ++row;
  if (row == rows_.size()) rows_.push_back(Row{label});
  const cudaEvent_t start = next_event();
  CHECK_CUDA(cudaEventRecord(start, stream));
  pending_.push_back(Pending{row, backward, start, nullptr});
  open_ = true;
}

void LayerTimer::end(cudaStream_t stream) {
  if (!open_) fatal("LayerTimer: end without begin");
  pending_.back().stop = next_event();
  CHECK_CUDA(cudaEventRecord(pending_.back().stop, stream));
  open_ = false;
}

void LayerTimer::collect() {
  if (open_) fatal("LayerTimer: collect inside a layer's range");
  for (const Pending& p : pending_) {
    CHECK_CUDA(cudaEventSynchronize(p.stop));
    float ms = 0.0f;
    CHECK_CUDA(cudaEventElapsedTime(&ms, p.start, p.stop));
    Row& r = rows_[p.row];
    (p.backward ? r.backward_s : r.forward_s) += ms * 1e-3;
    ++(p.backward ? r.backward_calls : r.forward_calls);
  }
  pending_.clear();
  pool_used_ = 0;
}

}  // namespace sb::cuda
