// The CUDA layer interface, mirroring the CPU reference's (nn/cpu/layer.h): forward(x, mode) returns the
// output, backward(dy) returns dx and overwrites this layer's parameter gradients.
//
// Precision: activations are in the context's compute dtype (fp32, fp16 or bf16) and 4-d ones in its
// layout. Parameters are bound as views into the model's flat buffers: fp32 master weights, fp32
// gradients (always written in fp32, whatever the compute dtype), a compute-dtype copy of the weights in
// the same order (the same memory as the master when computing in fp32), and fp32 buffers (BN running
// statistics). BN scale and bias are read from the fp32 master directly.
//
// Every layer keeps its outputs in grow-only buffers, and takes its input gradients from the context's
// shared gradient buffers (nn/cuda/gradient_pool.h): after one warm-up step at a given batch size no
// address changes, so the step can be captured in a CUDA graph.
#pragma once
#include <cstdint>

#include "core/tensor.h"
#include "nn/cpu/layer.h"

namespace sb::cuda {

using Mode = cpu::Mode;  // one Train/Eval for both backends

// A view of device memory: the shape is logical NCHW (or [N, F] for 2-d), stored in desc.layout.
struct DeviceTensor {
  void* data = nullptr;
  TensorDesc desc;

  int64_t numel() const { return desc.shape.numel(); }
  size_t bytes() const { return desc.bytes(); }
  const Shape& shape() const { return desc.shape; }
  DType dtype() const { return desc.dtype; }
  Layout layout() const { return desc.layout; }
};

// Views into the flat buffers, at one layer's (or container's) first parameter and first buffer element.
struct ParamViews {
  float* params = nullptr;          // fp32 master weights
  float* grads = nullptr;           // fp32 gradients
  void* compute_params = nullptr;   // compute-dtype copy of params (== params when computing in fp32)
  float* buffers = nullptr;         // fp32 non-learnable state
  DType compute = DType::F32;       // element type of compute_params
  // Convolution filters are stored K, R, S, C in every flat buffer (the network's NHWC storage,
  // nn/filter_order.h); otherwise [K, C, R, S] as in the spec.
  bool filters_krsc = false;

  // The views `params` parameter elements and `buffers` buffer elements further on.
  ParamViews advanced(int64_t params_count, int64_t buffers_count) const;
};

class Layer {
 public:
  virtual ~Layer() = default;
  // Views in the order of layer_params()/layer_buffers() of the spec (containers: depth-first).
  virtual void bind(const ParamViews& /*views*/) {}
  // Keys the layer's random draws (dropout) for the next forward, as on the CPU.
  virtual void set_random_stream(uint64_t /*key*/, uint64_t /*step*/) {}
  // The position of the next forward's first sample in the step's whole batch, as on the CPU (a
  // DataParallel replica's slice draws its part of the whole batch's dropout mask).
  virtual void set_first_sample(int64_t /*first*/) {}
  // x must stay alive and unchanged until backward. The output stays valid until the next forward.
  virtual const DeviceTensor& forward(const DeviceTensor& x, Mode mode) = 0;
  // dy: the gradient of the loss with respect to the last forward's output (same shape, dtype and
  // layout). Returns dx; overwrites (never accumulates) the parameter gradients. dx is dy itself, a view
  // of it, or a buffer from Context::acquire_gradient that the caller gives back once it is read (the
  // network's backward frees them all at its start: they stay valid until the next backward).
  virtual const DeviceTensor& backward(const DeviceTensor& dy) = 0;
};

}  // namespace sb::cuda
