#include "nn/cuda/gradient_pool.h"

#include "core/cuda_check.h"

namespace sb::cuda {

void GradientPool::begin_backward() {
  for (size_t i = 0; i < slots_.size(); ++i) {
    Slot& s = *slots_[i];
    s.in_use = false;
    s.pending = false;
    s.given_back = i;  // the order of creation, the same at every step
  }
  clock_ = slots_.size();
}

void* GradientPool::acquire(size_t bytes, cudaStream_t compute) {
  Slot* best = nullptr;
  for (const auto& slot : slots_) {
    Slot& s = *slot;
    if (s.in_use || s.buffer.bytes() < bytes) continue;
    if (!best || s.buffer.bytes() < best->buffer.bytes() ||
        (s.buffer.bytes() == best->buffer.bytes() && s.given_back < best->given_back))
      best = &s;
  }
  if (!best) {  // none fits: grow the largest free one
    for (const auto& slot : slots_) {
      Slot& s = *slot;
      if (!s.in_use && (!best || s.buffer.bytes() > best->buffer.bytes())) best = &s;
    }
    if (best) {
      best->buffer.ensure(bytes);  // cudaFree waits for the device: no reader of the old block is left
      best->pending = false;
    }
  }
  if (!best) {
    slots_.push_back(std::make_unique<Slot>());
    best = slots_.back().get();
    best->released = CudaEvent::create(cudaEventDisableTiming);
    best->buffer.ensure(bytes);
  }
  if (best->pending) CHECK_CUDA(cudaStreamWaitEvent(compute, best->released.get(), 0));
  best->in_use = true;
  best->pending = false;
  return best->buffer.data();
}

void GradientPool::release(const void* data, cudaStream_t wgrad) {
  if (!data) return;
  for (const auto& slot : slots_) {
    Slot& s = *slot;
    if (s.buffer.data() != data || !s.in_use) continue;
    s.in_use = false;
    s.given_back = clock_++;
    if (wgrad) {
      s.released.record(wgrad);
      s.pending = true;
    }
    return;
  }
}

void GradientPool::joined() {
  for (const auto& slot : slots_) slot->pending = false;
}

size_t GradientPool::bytes() const {
  size_t total = 0;
  for (const auto& slot : slots_) total += slot->buffer.bytes();
  return total;
}

}  // namespace sb::cuda
