// Dropout over kernels/dropout.h: the same Philox mask as the CPU layer (nn/cpu/dropout.h), drawn again in
// backward instead of stored. Eval mode, or p == 0, is the identity (a view). The step comes from
// set_random_stream, or from the context's device step when one is set (CUDA graph replays).
#pragma once
#include <cstdint>

#include "nn/cuda/context.h"
#include "nn/cuda/device_buffer.h"
#include "nn/cuda/layer.h"
#include "nn/spec.h"

namespace sb::cuda {

class Dropout final : public Layer {
 public:
  Dropout(const LayerSpec& spec, Context& ctx);
  void set_random_stream(uint64_t key, uint64_t step) override;
  void set_first_sample(int64_t first) override { first_sample_ = first; }
  const DeviceTensor& forward(const DeviceTensor& x, Mode mode) override;
  const DeviceTensor& backward(const DeviceTensor& dy) override;

 private:
  LayerSpec spec_;
  Context& ctx_;
  uint64_t mask_key_, step_ = 0;
  int64_t first_sample_ = 0;
  uint64_t first_element_ = 0;  // the last forward's mask index of its element 0
  bool identity_ = true;
  DeviceTensor y_, dx_;
  DeviceBuffer y_buffer_;
};

}  // namespace sb::cuda
